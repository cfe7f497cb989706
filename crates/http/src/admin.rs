//! `/api/admin/*`: operations on a running server, behind the admin key,
//! and what the operator console (`/console`) shows of them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use indicatif::ProgressBar;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::health::Readiness;
use super::search::{type_totals, TypeTotals};
use super::AppState;
use crate::error::{ErrorBody, Result};
use chaja_core::model::rfc3339;
use chaja_mirror::reindex::{RebuildStatus, Tracker};
use chaja_mirror::verify::Report;
use chaja_mirror::{reindex, verify};
use chaja_search::cache::Tier;
use chaja_store::outbox;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start_reindex))
        .routes(routes!(run_verify))
        .routes(routes!(status))
}

/// What the console remembers between calls: the rebuild started here and
/// the last verification.
#[derive(Clone, Default)]
pub struct Operations {
    pub rebuilds: Tracker,
    last_verify: Arc<Mutex<Option<LastVerify>>>,
    /// Documents by source, per generation and index version: counting them
    /// is a pass over every document, and a console polls every 2 s.
    counted: Arc<Mutex<Option<Counted>>>,
}

/// `((generation, index version), documents by source)`.
type Counted = ((u64, i64), chaja_index::search::SourceCounts);

/// A verification's counts (its drifted rows are left out), and when.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LastVerify {
    pub at: String,
    pub clean: bool,
    #[serde(flatten)]
    pub report: Report,
}

impl LastVerify {
    fn of(report: &Report) -> LastVerify {
        LastVerify {
            at: rfc3339(chaja_core::clock::now_ms()),
            clean: report.is_clean(),
            report: Report {
                drift: Vec::new(),
                ..report.clone()
            },
        }
    }
}

/// Starts a rebuild beside the live generation and answers at once; the
/// indexer catches it up and swaps it in. One rebuild at a time per index
/// directory, across processes (the CLI's too): 409 while one runs. Its
/// progress shows in `/api/admin/status`.
#[utoipa::path(post, path = "/api/admin/reindex", tag = "admin", responses((status = 202, description = "rebuild started"), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, description = "a rebuild is running", body = ErrorBody)))]
async fn start_reindex(State(state): State<AppState>) -> Result<(StatusCode, Json<Value>)> {
    let root = state.search.index.root().to_path_buf();
    let lock = reindex::lock(&root).await?;
    let db = state.db.clone();
    let options = state.rebuild;
    let bar = ProgressBar::hidden();
    let tracker = state.operations.rebuilds.clone();
    tracker.start(bar.clone());
    let sources = state.search.index.sources().clone();
    let rebuild = tokio::spawn(async move {
        reindex::reindex_locked(&db, &sources, &root, lock, options, bar).await
    });
    tokio::spawn(async move {
        // A panic in the rebuild is its failure too, not a scan that never
        // ends on the console.
        let result = rebuild.await.unwrap_or_else(|panic| Err(panic.into()));
        match &result {
            Ok(done) => tracing::info!(
                generation = done.generation,
                docs = done.docs,
                "admin reindex finished"
            ),
            Err(e) => tracing::error!(error = ?e, "admin reindex failed"),
        }
        tracker.finish(&result);
    });
    Ok((StatusCode::ACCEPTED, Json(json!({ "status": "started" }))))
}

/// Compares the tables with the live index; the drift also shows in
/// `/metrics` as `verify_drift`, and the counts in `/api/admin/status`.
#[utoipa::path(get, path = "/api/admin/verify", tag = "admin", responses((status = 200, body = Report), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn run_verify(State(state): State<AppState>) -> Result<Json<verify::Report>> {
    let mut report = verify::verify(
        &state.db,
        state.search.index.sources(),
        state.search.index.live(),
    )
    .await?;
    // A full pass over the tables: what it could not read is the list now.
    state.mirror.quarantine.replace(&report.unreadable_rows());
    *state
        .operations
        .last_verify
        .lock()
        .expect("last verify lock") = Some(LastVerify::of(&report));
    report.drift.truncate(1000);
    Ok(Json(report))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    pub index: IndexStatus,
    pub mirror: MirrorStatus,
    pub cache: CacheReport,
    /// Every replica and rebuild that reported its outbox position; null
    /// when the database did not answer within a second.
    pub replicas: Option<Vec<ReplicaStatus>>,
    /// The last verification run through this server, if any.
    pub verify: Option<LastVerify>,
    /// The last rebuild started through this server, if any.
    pub rebuild: Option<RebuildStatus>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IndexStatus {
    pub generation: u64,
    pub documents: u64,
    pub by_type: TypeTotals,
    pub size_bytes: u64,
    /// What the live generation was built with.
    pub analyzer: String,
    pub normalization: String,
    /// Attributes the sources declare as facets and as sortable: what the
    /// index keeps in columns for `facets=` and `sort=attr.…`.
    pub facets: Vec<String>,
    pub sortable: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MirrorStatus {
    pub applied_seq: i64,
    /// Outbox rows not yet applied; null while the database is down.
    pub backlog: Option<i64>,
    /// Age of the oldest of them.
    pub seconds_behind: Option<f64>,
    /// Documents written or deleted per second, over the last 10 s.
    pub applied_per_second: f64,
    pub last_commit: Option<String>,
    /// What `/readyz` answers.
    pub ready: bool,
    pub database_up: bool,
    /// Rows that cannot be read, left out of the index (see the
    /// quarantine): this process's list, at most 1,000.
    pub quarantined: Vec<chaja_mirror::quarantine::QuarantinedRow>,
    /// Rows put aside since this process started, counting repeats.
    pub quarantined_total: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CacheReport {
    pub tiers: Vec<TierReport>,
    pub redis: RedisReport,
}

/// Since this process started.
#[derive(Debug, Serialize, ToSchema)]
pub struct TierReport {
    pub tier: String,
    pub hits: u64,
    pub misses: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RedisReport {
    pub configured: bool,
    /// `closed`, `open` or `half_open`; null without Redis.
    pub breaker: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReplicaStatus {
    pub replica_id: String,
    pub applied_seq: i64,
    /// Outbox ids between its position and this server's.
    pub behind: i64,
    pub updated_at: String,
}

/// How long the status waits for the replicas' positions.
const REPLICAS_TIMEOUT: Duration = Duration::from_secs(1);

/// Everything the operator console shows, in one call: the index, the
/// mirror's lag, the cache tiers, the replicas, and the last verification
/// and rebuild. The index figures are read on the blocking pool; only the
/// replica list takes a database connection, with a short timeout.
#[utoipa::path(get, path = "/api/admin/status", tag = "admin", responses((status = 200, body = Status), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
async fn status(State(state): State<AppState>) -> Result<Json<Status>> {
    let generation = state.search.index.live();
    let live_id = generation.id;
    let at = (live_id, state.mirror.progress.version());
    let counted = state.operations.counted.clone();
    let sources = state.search.index.sources().clone();
    let index = tokio::task::spawn_blocking(move || -> Result<IndexStatus> {
        let known = *counted.lock().expect("counted lock");
        let counts = match known {
            Some((when, counts)) if when == at => counts,
            _ => {
                let counts = generation.docs_by_source()?;
                *counted.lock().expect("counted lock") = Some((at, counts));
                counts
            }
        };
        let (analyzer, normalization) = generation.built_with();
        Ok(IndexStatus {
            generation: generation.id,
            documents: counts.iter().sum(),
            by_type: type_totals(&sources, &counts),
            size_bytes: generation.size_bytes(),
            analyzer,
            normalization,
            facets: sources
                .facet_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            sortable: sources
                .sortable_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        })
    })
    .await??;

    let readiness = Readiness::of(&state);
    let progress = &state.mirror.progress;
    let applied = progress.applied_seq();
    let last_commit = Some(progress.last_commit_ms())
        .filter(|&ms| ms > 0)
        .map(rfc3339);
    let mirror = MirrorStatus {
        applied_seq: applied,
        backlog: readiness.backlog,
        seconds_behind: readiness.seconds_behind,
        applied_per_second: state.mirror.progress.applied_per_second(),
        last_commit,
        ready: readiness.ready(),
        database_up: readiness.database,
        quarantined: state.mirror.quarantine.rows(),
        quarantined_total: state.mirror.quarantine.total(),
    };

    let tiers = Tier::ALL
        .iter()
        .map(|&tier| {
            let (hits, misses) = state.search.cache.tier_counts(tier);
            TierReport {
                tier: tier.as_str().to_owned(),
                hits,
                misses,
            }
        })
        .collect();
    let breaker = state.search.cache.redis_state();
    let cache = CacheReport {
        tiers,
        redis: RedisReport {
            configured: breaker.is_some(),
            breaker: breaker.map(|b| b.as_str().to_owned()),
        },
    };

    let replicas = match tokio::time::timeout(REPLICAS_TIMEOUT, outbox::replicas(&state.db)).await {
        Ok(Ok(rows)) => Some(
            rows.into_iter()
                .map(|(replica_id, position, updated_ms)| ReplicaStatus {
                    replica_id,
                    applied_seq: position,
                    behind: (applied - position).max(0),
                    updated_at: rfc3339(updated_ms),
                })
                .collect(),
        ),
        _ => None,
    };

    Ok(Json(Status {
        index,
        mirror,
        cache,
        replicas,
        verify: state
            .operations
            .last_verify
            .lock()
            .expect("last verify lock")
            .clone(),
        rebuild: state.operations.rebuilds.status(live_id),
    }))
}
