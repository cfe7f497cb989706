//! The source of truth, as chaja reads and prepares it: MySQL (or MariaDB)
//! in production, SQLite embedded.
//!
//! - [`db`]: the pool ([`Db`]), the dialect, text columns read alike on
//!   both, and shared secrets.
//! - [`rows`]: a source's current, visible rows, by key and by keyset page;
//!   a row that is absent or fails its filter loads as `None` (a delete).
//! - [`outbox`]: the queries the indexer, rebuilds and pruning run on
//!   `search_outbox` and its bookkeeping tables.
//! - [`install`]: the one definition of chaja's own tables and of the
//!   triggers that fill the outbox in the writer's transaction, checked
//!   against the tables first, all or nothing; [`watch`]: which columns a
//!   source reads, so that an update of any other costs nothing.
//!
//! Nothing here knows HTTP: a caller asks [`StoreError::is_unavailable`]
//! whether a failure means "the database is down, try later".

pub mod db;
pub mod install;
pub mod outbox;
pub mod rows;
pub mod watch;

pub use db::{insert, random_secret, secret, text, Db, Dialect};

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error")]
    Database(#[from] sqlx::Error),

    #[error("DATABASE_URL must start with mysql:// or sqlite:")]
    BadUrl,

    /// The tables do not fit the configured sources, or the triggers are
    /// missing or differ: the message names the source, the column and the
    /// fix.
    #[error("{0}")]
    Misconfigured(String),
}

impl StoreError {
    /// True when the database could not be reached or timed out: the
    /// request may succeed later, and nothing was written.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Database(
                sqlx::Error::Io(_)
                    | sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::WorkerCrashed
            )
        )
    }
}
