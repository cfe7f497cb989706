//! Every setting: one clap struct, each option with an env fallback.
//! `chaja serve --help` is the reference; `.env.example` lists the variables.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

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
    Serve(ServeArgs),
    /// Rebuild the index from the tables beside the live one, then swap it in.
    Reindex(StoreArgs),
    /// Insert generated questions and reviews straight into the tables.
    Seed(SeedArgs),
}

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

    /// Memory for the index writer, in MiB.
    #[arg(long, env = "CHAJA_WRITER_MEMORY_MB", default_value_t = 256)]
    pub writer_memory_mb: usize,
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

    pub fn writer_memory(&self) -> usize {
        self.writer_memory_mb.max(16) << 20
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

    /// Redis for the shared cache tier; without it the cache is in-process only.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,

    /// Prefix of every Redis key chaja writes; replicas of one deployment
    /// share it.
    #[arg(long, env = "CHAJA_CACHE_PREFIX", default_value = "chaja")]
    pub cache_prefix: String,

    /// The stalest cached answer served, in milliseconds. An answer computed
    /// at the index's current outbox position is served at any age.
    #[arg(long, env = "CHAJA_CACHE_MAX_STALE_MS", default_value_t = 2000)]
    pub cache_max_stale_ms: u64,

    /// Size of the in-process cache tier, in MiB.
    #[arg(long, env = "CHAJA_CACHE_L1_MB", default_value_t = 64)]
    pub cache_l1_mb: u64,

    /// Secret that signs search cursors. Replicas behind one balancer need
    /// the same one; set your own so that cursors cannot be forged.
    #[arg(
        long,
        env = "CHAJA_CURSOR_SECRET",
        default_value = "chaja-cursor-secret",
        hide_default_value = true
    )]
    pub cursor_secret: String,

    /// How often the indexer polls the outbox when idle, in milliseconds.
    /// Local writes wake it at once; this bounds the lag of other writers.
    #[arg(long, env = "CHAJA_POLL_MS", default_value_t = 200)]
    pub poll_ms: u64,

    /// How long a missing outbox id holds back the recorded position before
    /// it is taken as a rolled-back transaction, in seconds.
    #[arg(long, env = "CHAJA_GAP_GRACE_SECS", default_value_t = 60)]
    pub gap_grace_secs: u64,
}

impl ServeArgs {
    pub fn poll(&self) -> Duration {
        Duration::from_millis(self.poll_ms.max(1))
    }
}

#[derive(Debug, Clone, Args)]
pub struct SeedArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Number of questions; each gets about two reviews.
    #[arg(long, default_value_t = 1000)]
    pub rows: u64,

    /// Random seed: the same seed gives the same rows.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Real sentences to draw text from (`sentences.tsv.gz` or
    /// `docs.jsonl.gz`); without it a built-in generator writes the text.
    #[arg(long)]
    pub corpus: Option<PathBuf>,
}
