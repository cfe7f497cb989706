//! The index's error: tantivy's, the file system's around it, and the
//! Korean dictionary's. What went wrong is in the message; whether a
//! caller retries, reindexes or gives up is the caller's to decide.

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index error")]
    Tantivy(#[from] tantivy::TantivyError),

    #[error("index i/o error")]
    Io(#[from] std::io::Error),

    /// An index (or a file of it) that is not what this version expects:
    /// another layout, other sources, a bad stamp or payload. The message
    /// says what to do (usually `chaja reindex`).
    #[error("{0}")]
    Refused(String),

    /// A document the index holds could not be read back (its stored
    /// text): an answer without it, or with it counted unread, would be
    /// wrong with no error, so the search fails instead.
    #[error("the index could not read a document back: {0}")]
    Unreadable(String),

    /// The Korean dictionary could not be built or loaded.
    #[error("korean dictionary: {0}")]
    Dictionary(String),
}

impl From<tantivy::directory::error::OpenDirectoryError> for IndexError {
    fn from(e: tantivy::directory::error::OpenDirectoryError) -> IndexError {
        IndexError::Tantivy(e.into())
    }
}

impl IndexError {
    /// See [`IndexError::Refused`].
    pub(crate) fn invalid(message: String) -> IndexError {
        IndexError::Refused(message)
    }
}
