//! Liveness and readiness.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use chaja_mirror::STUCK_AFTER;

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
/// whose index is frozen or known stale (database down, indexer dead or
/// stuck, outbox rewound under it, or pruned past what it applied) should
/// not take new traffic from a balancer that has a
/// better one.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses((status = 200, description = "index open, database reachable, indexer following the outbox"), (status = 503, description = "database unreachable, the indexer stopped, stuck or waiting for a rebuild, the read replica lagging, the index still being read into memory after a start, or the server draining before shutdown")))]
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let readiness = Readiness::of(&state);
    let status = if readiness.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let generation = state.search.index.live();
    let body = json!({
        "database": readiness.database,
        "draining": readiness.draining,
        "warming": readiness.warming,
        // Redis never decides readiness: searches answer without it.
        "redis": state.search.cache.redis_state().map_or("off", |s| s.as_str()),
        "index": { "generation": generation.id, "docs": generation.num_docs() },
        "indexer": {
            "applied_seq": state.mirror.progress.applied_seq(),
            "failing": readiness.failing,
            "stopped": readiness.stopped,
            "stuck": readiness.stuck,
            "rewound": readiness.rewound,
            "behind_pruned": readiness.behind_pruned,
            "unchecked": readiness.unchecked,
            "lagging": readiness.lagging,
            "applied_per_second": state.mirror.progress.applied_per_second(),
            "outbox_backlog": readiness.backlog,
            "seconds_behind": readiness.seconds_behind,
        },
        // Present when the indexer reads from a replica: its lag behind
        // the primary, in outbox rows and seconds.
        "replica": readiness.replica.map(|r| json!({
            "up": r.up,
            "behind_rows": r.behind_rows,
            "seconds_behind": r.seconds_behind,
            "lagging": r.lagging,
        })),
    });
    (status, Json(body))
}

/// What readiness is decided from, read without a database connection:
/// the background check's last finding and the indexer's progress.
pub(crate) struct Readiness {
    pub database: bool,
    pub stopped: bool,
    pub stuck: bool,
    pub rewound: bool,
    /// Behind the prune point: its index misses changes the outbox no
    /// longer holds, until its rebuild is live.
    pub behind_pruned: bool,
    /// The indexer has not yet checked its position against the outbox
    /// (just started, or the database was down since).
    pub unchecked: bool,
    /// The oldest change not applied yet is older than
    /// `CHAJA_MAX_LAG_SECS`: the indexer falls behind its writers.
    pub lagging: bool,
    pub failing: bool,
    /// Shutting down: still answering, taking no new traffic.
    pub draining: bool,
    /// The index is still being read into the page cache after a start.
    pub warming: bool,
    /// Outbox rows past the applied position; unknown while the database
    /// is down.
    pub backlog: Option<i64>,
    /// Age of the oldest of them, in seconds.
    pub seconds_behind: Option<f64>,
    /// The read replica's lag, when the indexer reads from one.
    pub replica: Option<chaja_mirror::health::ReplicaFinding>,
}

impl Readiness {
    pub fn of(state: &AppState) -> Readiness {
        // From the background check: a probe never takes a connection.
        let health = state.mirror.health.current();
        let progress = &state.mirror.progress;
        let backlog = health.and_then(|h| h.backlog);
        let (backlog, seconds_behind) =
            (backlog.map(|b| b.rows), backlog.map(|b| b.seconds_behind));
        Readiness {
            database: health.is_some_and(|h| h.database),
            stopped: progress.is_stopped(),
            stuck: progress.since_tick() >= STUCK_AFTER,
            rewound: progress.is_rewound(),
            behind_pruned: progress.is_behind_pruned(),
            unchecked: !progress.is_checked(),
            lagging: seconds_behind.is_some_and(|s| s > state.max_lag.as_secs_f64()),
            failing: progress.is_failing(),
            draining: progress.is_draining(),
            warming: progress.is_warming(),
            backlog,
            seconds_behind,
            replica: health.and_then(|h| h.replica),
        }
    }

    pub fn ready(&self) -> bool {
        let lagging = self.replica.is_some_and(|r| r.lagging);
        self.database
            && !self.stopped
            && !self.stuck
            && !self.rewound
            && !self.behind_pruned
            && !self.unchecked
            && !self.lagging
            && !self.failing
            && !self.draining
            && !self.warming
            && !lagging
    }
}
