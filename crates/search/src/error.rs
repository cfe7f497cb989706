//! The answer path's error. The HTTP layer decides what a client sees of
//! it; here each variant says what happened.

use std::sync::Arc;

use chaja_index::IndexError;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// Too many searches are waiting already (see `turns`); try again
    /// later.
    #[error("the server is busy with other searches; try again")]
    Overloaded,

    /// A search ran out of its time budget (the request timeout).
    #[error("the search took too long; try again")]
    TimedOut,

    /// Redis is configured for something only it holds, and is not
    /// answering.
    #[error("{0} needs redis, which is not answering; try again later")]
    RedisUnavailable(&'static str),

    /// What a request names is not there (a like search's row).
    #[error("{0}")]
    NotFound(String),

    /// A cursor names a point in time no longer held (see `snapshots`):
    /// its walk paused longer than the keep-alive, was crowded out, or
    /// began on another process. The walk starts again from its first
    /// page.
    #[error("the cursor's point in time has expired; start the walk again from the first page")]
    CursorExpired,

    /// A setting of this crate is wrong (`REDIS_URL`, the cache prefix): a
    /// start-up error.
    #[error("{0}")]
    Config(String),

    #[error(transparent)]
    Index(#[from] IndexError),

    /// A blocking search task panicked or was cancelled.
    #[error("search worker failed")]
    Join(#[from] tokio::task::JoinError),

    /// One computation's error, shared by every request that waited on it.
    #[error("{0}")]
    Shared(Arc<SearchError>),
}

impl SearchError {
    /// The server was too busy to answer in time (shed, or out of time),
    /// as opposed to failing: an older answer still within its bound is
    /// better than this.
    pub fn is_busy(&self) -> bool {
        match self {
            SearchError::Overloaded | SearchError::TimedOut => true,
            SearchError::Shared(inner) => inner.is_busy(),
            _ => false,
        }
    }
}

impl From<tantivy::TantivyError> for SearchError {
    fn from(e: tantivy::TantivyError) -> SearchError {
        SearchError::Index(e.into())
    }
}

impl From<std::io::Error> for SearchError {
    fn from(e: std::io::Error) -> SearchError {
        SearchError::Index(e.into())
    }
}

impl From<chaja_index::search::ScanError> for SearchError {
    fn from(e: chaja_index::search::ScanError) -> SearchError {
        match e {
            chaja_index::search::ScanError::Stopped => SearchError::TimedOut,
            chaja_index::search::ScanError::Index(e) => SearchError::Index(e),
        }
    }
}
