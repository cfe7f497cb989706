//! `/api/admin/*`: operations on a running server, behind the API key.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use crate::error::{ErrorBody, Result};
use crate::mirror::verify::Report;
use crate::mirror::{reindex, verify};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start_reindex))
        .routes(routes!(run_verify))
}

/// Starts a rebuild beside the live generation and answers at once; the
/// indexer catches it up and swaps it in. One rebuild at a time per index
/// directory, across processes (the CLI's too): 409 while one runs.
#[utoipa::path(post, path = "/api/admin/reindex", tag = "admin", responses((status = 202, description = "rebuild started"), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, description = "a rebuild is running", body = ErrorBody)))]
async fn start_reindex(State(state): State<AppState>) -> Result<(StatusCode, Json<Value>)> {
    let root = state.index.root().to_path_buf();
    let lock = reindex::lock(&root).await?;
    let db = state.db.clone();
    let memory = state.writer_memory;
    tokio::spawn(async move {
        match reindex::reindex_locked(&db, &root, lock, memory, false).await {
            Ok(done) => tracing::info!(
                generation = done.generation,
                docs = done.docs,
                "admin reindex finished"
            ),
            Err(e) => tracing::error!(error = ?e, "admin reindex failed"),
        }
    });
    Ok((StatusCode::ACCEPTED, Json(json!({ "status": "started" }))))
}

/// Compares the tables with the live index; the drift also shows in
/// `/metrics` as `verify_drift`.
#[utoipa::path(get, path = "/api/admin/verify", tag = "admin", responses((status = 200, body = Report), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn run_verify(State(state): State<AppState>) -> Result<Json<verify::Report>> {
    let mut report = verify::verify(&state.db, state.index.live()).await?;
    report.drift.truncate(1000);
    Ok(Json(report))
}
