//! Wiring: open the stores, start the indexer, serve, and stop cleanly.

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use std::time::Duration;

use chaja_core::sources::ConfigFile;
use chaja_http::{AppState, Shared};
use chaja_index::SearchIndex;
use chaja_mirror::indexer::Indexer;
use chaja_mirror::MirrorHandle;
use chaja_search::cache::SearchCache;
use chaja_search::lane::heavy_lane;
use chaja_search::trending::Trending;
use chaja_search::turns::Turns;
use chaja_search::SearchService;
use chaja_store::Db;

use crate::config::ServeArgs;

/// Why the server could not start: each crate's error, or a setting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] chaja_core::ConfigError),
    #[error(transparent)]
    Store(#[from] chaja_store::StoreError),
    #[error(transparent)]
    Index(#[from] chaja_index::IndexError),
    #[error(transparent)]
    Search(#[from] chaja_search::SearchError),
    #[error("{0}")]
    Setting(&'static str),
    #[error("i/o error")]
    Io(#[from] std::io::Error),
    #[error("start-up task failed")]
    Join(#[from] tokio::task::JoinError),
}

pub type Result<T, E = StartError> = std::result::Result<T, E>;

pub struct App {
    pub state: AppState,
    /// Routes beside chaja's own: the demo platform's, when it is the
    /// configured one.
    extra_routes: utoipa_axum::router::OpenApiRouter<AppState>,
    limits: chaja_http::Limits,
    indexer: Indexer,
    /// A one-connection pool for the health check, apart from the pool
    /// writes and the indexer use (see `mirror::health`).
    health_db: Db,
    /// The read replica the indexer tails, watched for lag on a pool of
    /// its own.
    replica_watch: Option<chaja_mirror::health::ReplicaWatch>,
    /// How long to answer, not ready, between the shutdown signal and
    /// closing the listener.
    drain: Duration,
    /// Stops reading the index into the page cache (see `index::warm`)
    /// at shutdown, so that a stop never waits for a long read.
    stop_warming: CancellationToken,
    /// Stops it too when the app ends any other way: a failed start, a
    /// listener that could not bind, a server that returned by itself
    /// (the runtime waits for blocking tasks before the process exits).
    warm_guard: tokio_util::sync::DropGuard,
}

/// Clears `warming` when the warm-up ends, even by a panic, so that
/// readiness never waits for a read that is gone.
struct WarmingDone(std::sync::Arc<chaja_mirror::Progress>);

impl Drop for WarmingDone {
    fn drop(&mut self) {
        self.0.set_warming(false);
    }
}

impl App {
    /// Opens the database (lazily: a database that is down only fails
    /// writes) and the index, and prepares the indexer.
    pub async fn build(args: &ServeArgs) -> Result<App> {
        if let Some(dir) = args.store.sqlite_dir() {
            std::fs::create_dir_all(dir)?;
        }
        let file = ConfigFile::load_or_default(args.store.config.as_deref())?;
        let (sources, is_demo) = chaja_demo::sources_of(&file);
        let db = Db::connect_lazy(&args.store.database_url, args.store.pool_size())?;
        // The demo's tables and triggers are its migrations; someone
        // else's tables get theirs from `chaja install`, checked here.
        let prepared = if is_demo {
            chaja_demo::migrate(&db).await.map_err(|e| match e {
                chaja_demo::DemoError::Store(e) => e,
                other => chaja_store::StoreError::Misconfigured(other.to_string()),
            })
        } else {
            chaja_store::install::check_installed(&db, &sources).await
        };
        let database_up = match prepared {
            Ok(()) => true,
            Err(e) if e.is_unavailable() => {
                tracing::warn!(error = ?e, "database unavailable at start; serving searches from the index");
                false
            }
            Err(e) => return Err(e.into()),
        };
        let health_db = Db::connect_lazy(&args.store.database_url, 1)?;
        args.store.init_analyzer();
        let dir = args.store.index_dir.clone();
        let index = {
            let sources = sources.clone();
            tokio::task::spawn_blocking(move || SearchIndex::open_for_serving(&dir, &sources))
                .await??
        };
        let mirror = MirrorHandle {
            health: chaja_mirror::health::Health::starting(database_up),
            ..MirrorHandle::default()
        };
        mirror.progress.committed(index.live().applied_seq()?);
        // Not ready until the index is in the page cache: after a restart
        // on a cold cache, the first queries would otherwise read it from
        // disk piece by piece (see `index::warm`). Searches are answered
        // meanwhile; only the balancer waits.
        mirror.progress.set_warming(true);
        let stop_warming = CancellationToken::new();
        let warm_guard = stop_warming.clone().drop_guard();
        {
            let done = WarmingDone(mirror.progress.clone());
            let live = index.live();
            let dir = live.path.clone();
            let stop = stop_warming.clone();
            tokio::task::spawn_blocking(move || {
                let _done = done;
                let started = std::time::Instant::now();
                let budget = chaja_index::warm::default_budget();
                match chaja_index::warm::warm(&dir, budget, &|| !stop.is_cancelled()) {
                    Ok(warmed) => tracing::info!(
                        files = warmed.files,
                        bytes = warmed.bytes,
                        skipped_bytes = warmed.skipped_bytes,
                        ms = started.elapsed().as_millis() as u64,
                        "index read into the page cache"
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "reading the index into the page cache failed; serving it cold")
                    }
                }
                // The per-document arrays the scan reads, built before
                // ready so that no first query builds them.
                let started = std::time::Instant::now();
                match live.prime() {
                    Ok(()) => tracing::info!(
                        ms = started.elapsed().as_millis() as u64,
                        "per-segment arrays built"
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "building the per-segment arrays failed; queries build them")
                    }
                }
            });
        }
        let redis = args.cache.redis()?;
        let cache = SearchCache::new(
            redis.clone(),
            args.cache.settings(),
            mirror.progress.version_handle(),
        );
        // Searches that found nothing, counted as trending is, apart; for
        // the operators, so one client's miss is worth listing.
        let zero_results = Trending::new(
            redis.as_ref().map(|r| r.namespaced("zero")),
            args.cache.trending_min_chars,
            1,
        );
        let trending = Trending::new(
            redis,
            args.cache.trending_min_chars,
            args.cache.trending_min_clients,
        );
        let mut indexer = Indexer::new(db.clone(), index.clone(), mirror.clone(), args.indexer());
        let mut replica_watch = None;
        if let Some(url) = &args.mirror.database_read_url {
            let replica = Db::connect_lazy(url, args.store.pool_size())?;
            if replica.dialect != db.dialect {
                return Err(StartError::Setting(
                    "DATABASE_READ_URL must be a replica of DATABASE_URL, on the same kind of database",
                ));
            }
            indexer = indexer.reading_from(replica);
            replica_watch = Some(chaja_mirror::health::ReplicaWatch {
                db: Db::connect_lazy(url, 1)?,
                max_lag: args.mirror.max_replica_lag,
            });
        }
        let secret = cursor_secret(&db, args.keys.cursor_secret.as_deref()).await;
        let synonyms = chaja_core::synonyms::Synonyms::new(&file.synonyms.groups)?;
        let extra_routes = if is_demo {
            chaja_demo::http::router(chaja_demo::http::DemoState {
                db: db.clone(),
                wake: mirror.wake.clone(),
                input: args.input_limits(),
            })
        } else {
            utoipa_axum::router::OpenApiRouter::new()
        };
        let search = SearchService::new(
            index,
            cache,
            trending,
            zero_results,
            chaja_search::suggest::Suggester::default(),
            heavy_lane(args.limits.heavy_searches()),
            Turns::new(
                "engine",
                args.limits.search_turns(),
                args.limits.max_queued_searches,
            ),
            blake3::derive_key("chaja search cursor v1", secret.as_bytes()),
            args.limits.cursor_keep_alive(),
            args.limits.request_timeout(),
        );
        Ok(App {
            extra_routes,
            limits: args.limits(),
            state: AppState::new(Shared {
                db,
                search,
                mirror,
                rebuild: args.store.rebuild_options(),
                max_lag: args.mirror.max_lag,
                input: args.input_limits(),
                synonyms: std::sync::Arc::new(synonyms),
                operations: Default::default(),
            }),
            indexer,
            health_db,
            replica_watch,
            drain: args.drain,
            stop_warming,
            warm_guard,
        })
    }

    /// Serves on `listener` until `shutdown`; in-flight requests finish and
    /// the indexer commits before this returns.
    pub async fn run(self, listener: TcpListener, shutdown: CancellationToken) -> Result<()> {
        // Held until the server has returned, however it returns.
        let _warm_guard = self.warm_guard;
        // Draining: on the signal `/readyz` turns 503 at once, and the
        // listener closes only after `drain`, so a balancer stops sending
        // here before connections are refused. The indexer and the other
        // background tasks go on until then, so the index does not freeze
        // while the server still answers.
        let serving = CancellationToken::new();
        tokio::spawn({
            let (shutdown, serving) = (shutdown.clone(), serving.clone());
            let (progress, drain) = (self.state.mirror.progress.clone(), self.drain);
            let stop_warming = self.stop_warming.clone();
            async move {
                tokio::select! {
                    _ = shutdown.cancelled() => {}
                    _ = serving.cancelled() => return,
                }
                stop_warming.cancel();
                if !drain.is_zero() {
                    progress.start_draining();
                    tracing::info!(
                        drain_ms = drain.as_millis() as u64,
                        "draining before shutdown"
                    );
                    tokio::time::sleep(drain).await;
                }
                serving.cancel();
            }
        });
        let indexer = self.indexer;
        let token = serving.clone();
        let indexer = tokio::spawn(async move {
            // Logged when it happens: searches go on, but the index stops
            // following the database until a restart.
            let result = indexer.run(token).await;
            if let Err(e) = &result {
                tracing::error!(error = ?e, "indexer stopped with an error");
            }
            result
        });
        let suggester = self.state.search.suggester.clone().run(
            self.state.search.index.clone(),
            self.state.search.trending.clone(),
            serving.clone(),
        );
        let suggester = tokio::spawn(suggester);
        let health = tokio::spawn(self.state.mirror.health.clone().watch(
            self.health_db,
            self.replica_watch,
            self.state.mirror.progress.clone(),
            serving.clone(),
        ));
        let served = chaja_http::serve(
            listener,
            self.state,
            &self.limits,
            self.extra_routes,
            serving.clone(),
        )
        .await;
        serving.cancel();
        shutdown.cancel();
        // An indexer error was logged when it happened.
        let _ = indexer.await?;
        suggester.await?;
        health.await?;
        Ok(served?)
    }
}

/// The cursor secret: the configured one, else the one stored in the
/// database (generated by the first server that asks). With the database
/// down at start, a random one for this process: its cursors work here
/// only, which a restart with the database up mends.
async fn cursor_secret(db: &Db, configured: Option<&str>) -> String {
    if let Some(secret) = configured.filter(|s| !s.is_empty()) {
        return secret.to_owned();
    }
    match chaja_store::secret(db, "cursor").await {
        Ok(secret) => secret,
        Err(e) => {
            tracing::warn!(error = ?e, "cannot read the shared cursor secret; this process signs cursors with its own until restarted");
            chaja_store::random_secret()
        }
    }
}
