//! The demo platform's error. Its routes turn it into the API's
//! [`chaja_http::ApiError`], which alone knows status codes.

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{0} not found")]
    NotFound(&'static str),

    /// A write names a user that does not exist.
    #[error("{0}")]
    UnknownUser(String),

    /// `--corpus` is unreadable or holds no sentences.
    #[error("{0}")]
    Corpus(String),

    #[error(transparent)]
    Store(#[from] chaja_store::StoreError),

    #[error("i/o error")]
    Io(#[from] std::io::Error),
}

impl From<sqlx::Error> for DemoError {
    fn from(e: sqlx::Error) -> DemoError {
        DemoError::Store(e.into())
    }
}

impl From<DemoError> for chaja_http::ApiError {
    fn from(e: DemoError) -> chaja_http::ApiError {
        use chaja_http::ApiError;
        match e {
            DemoError::NotFound(what) => ApiError::NotFound(what),
            DemoError::UnknownUser(message) => ApiError::Unprocessable(message),
            DemoError::Corpus(message) => ApiError::bad_request("bad_corpus", message),
            DemoError::Store(e) => ApiError::Store(e),
            DemoError::Io(e) => ApiError::Store(chaja_store::StoreError::Database(e.into())),
        }
    }
}
