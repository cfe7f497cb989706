//! Liveness and readiness.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/healthz",
            get(|| async { Json(json!({ "status": "ok" })) }),
        )
        .route("/readyz", get(readyz))
}

/// Ready when the index is open and the database answers. Searches work
/// without the database, but a replica that cannot follow the outbox should
/// not take new traffic from a balancer that has a better one.
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let database = matches!(
        tokio::time::timeout(Duration::from_secs(1), state.db.ping()).await,
        Ok(Ok(()))
    );
    let generation = state.index.live();
    let progress = &state.mirror.progress;
    let status = if database {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "database": database,
        "index": { "generation": generation.id, "docs": generation.num_docs() },
        "indexer": {
            "applied_seq": progress.applied_seq(),
            "failing": progress.is_failing(),
        },
    });
    (status, Json(body))
}
