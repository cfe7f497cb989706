//! The mirror's error: the store's, the index's, and the one conflict the
//! mirror itself decides, a rebuild already running on the index directory.

use chaja_index::IndexError;
use chaja_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error(transparent)]
    Store(#[from] StoreError),

    #[error(transparent)]
    Index(#[from] IndexError),

    /// `REBUILD.lock` is held: one rebuild at a time per index directory.
    #[error("a reindex is already running on this index directory")]
    RebuildRunning,

    /// A blocking task of the mirror panicked or was cancelled.
    #[error("mirror worker failed")]
    Join(#[from] tokio::task::JoinError),
}

impl MirrorError {
    /// True when the database could not be reached (see
    /// [`StoreError::is_unavailable`]).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, MirrorError::Store(e) if e.is_unavailable())
    }
}

impl From<sqlx::Error> for MirrorError {
    fn from(e: sqlx::Error) -> MirrorError {
        MirrorError::Store(e.into())
    }
}

impl From<tantivy::TantivyError> for MirrorError {
    fn from(e: tantivy::TantivyError) -> MirrorError {
        MirrorError::Index(e.into())
    }
}

impl From<std::io::Error> for MirrorError {
    fn from(e: std::io::Error) -> MirrorError {
        MirrorError::Index(e.into())
    }
}
