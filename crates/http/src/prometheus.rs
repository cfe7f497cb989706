//! `GET /metrics` in the Prometheus text format.
//!
//! Counters and histograms are recorded where things happen (requests,
//! cache tiers, index commits); the gauges below are read at scrape time.

use std::sync::OnceLock;

use axum::extract::State;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder once; later calls reuse it.
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                ])
                .expect("static buckets are valid")
                .build_recorder();
            let handle = recorder.handle();
            // Another recorder (a test harness's) may already be installed;
            // then this one only renders what it is given.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(render))
}

#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", body = String)))]
async fn render(State(state): State<AppState>) -> String {
    let generation = state.search.index.live();
    metrics::gauge!("index_documents").set(generation.num_docs() as f64);
    metrics::gauge!("index_patched_rows").set(generation.view().patches.len() as f64);
    metrics::gauge!("index_generation").set(generation.id as f64);
    let applied = state.mirror.progress.applied_seq();
    metrics::gauge!("outbox_applied_seq").set(applied as f64);
    metrics::gauge!("index_changes_applied_per_second")
        .set(state.mirror.progress.applied_per_second());
    metrics::gauge!("db_pool_connections", "state" => "open").set(f64::from(state.db.pool.size()));
    metrics::gauge!("db_pool_connections", "state" => "idle").set(state.db.pool.num_idle() as f64);
    // The backlog as the background check last found it: a scrape never
    // takes a connection (see `mirror::health`).
    let readiness = super::health::Readiness::of(&state);
    if let (Some(backlog), Some(behind)) = (readiness.backlog, readiness.seconds_behind) {
        metrics::gauge!("outbox_backlog").set(backlog as f64);
        metrics::gauge!("outbox_seconds_behind").set(behind);
    }
    if let Some(replica) = readiness.replica {
        metrics::gauge!("replica_up").set(if replica.up { 1.0 } else { 0.0 });
        if let (Some(rows), Some(seconds)) = (replica.behind_rows, replica.seconds_behind) {
            metrics::gauge!("replica_lag_rows").set(rows as f64);
            metrics::gauge!("replica_lag_seconds").set(seconds);
        }
    }
    install().render()
}
