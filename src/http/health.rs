//! Liveness and readiness.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use crate::db::now_ms;
use crate::mirror::STUCK_AFTER;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// Alive: the process answers. Says nothing about the stores.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "alive")))]
async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Ready when the index is open, the database answered the last background
/// check (at most a few seconds old) and the indexer is following the
/// outbox (its last round did not fail). Searches work without the database, but a replica
/// whose index is frozen (database down, indexer dead or stuck, outbox
/// rewound under it) should not take new traffic from a balancer that has a
/// better one.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses((status = 200, description = "index open, database reachable, indexer following the outbox"), (status = 503, description = "database unreachable, or the indexer stopped, stuck or waiting for a rebuild")))]
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    // From the background check: a probe never takes a connection.
    let health = state.mirror.health.current();
    let database = health.is_some_and(|h| h.database);
    let generation = state.index.live();
    let progress = &state.mirror.progress;
    let stopped = progress.is_stopped();
    let stuck = progress.since_tick() >= STUCK_AFTER;
    let rewound = progress.is_rewound();
    let failing = progress.is_failing();
    let status = if database && !stopped && !stuck && !rewound && !failing {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // Lag needs the database too; unknown while it is down.
    let applied = progress.applied_seq();
    let lag = health.and_then(|h| h.backlog);
    let (backlog, seconds_behind) = match lag {
        Some((backlog, oldest)) => (
            Some(backlog),
            Some(oldest.map_or(0.0, |t| (now_ms() - t).max(0) as f64 / 1000.0)),
        ),
        None => (None, None),
    };
    let body = json!({
        "database": database,
        // Redis never decides readiness: searches answer without it.
        "redis": state.cache.redis_state().map_or("off", |s| s.as_str()),
        "index": { "generation": generation.id, "docs": generation.num_docs() },
        "indexer": {
            "applied_seq": applied,
            "failing": failing,
            "stopped": stopped,
            "stuck": stuck,
            "rewound": rewound,
            "outbox_backlog": backlog,
            "seconds_behind": seconds_behind,
        },
    });
    (status, Json(body))
}
