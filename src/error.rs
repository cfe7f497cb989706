//! The one error type of the library, and how the API shows it.
//!
//! Every error becomes `{"error": {"code", "message"}}`. Client mistakes are
//! 4xx with a message that says what to fix; a store that cannot be reached is
//! a 503; anything else is logged in full and shown as a bare 500.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The body of every error response.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `invalid_size`, `not_found`, `rate_limited`, …
    pub code: String,
    /// What to fix, for people.
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed or breaks a limit.
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },

    #[error("{0} not found")]
    NotFound(&'static str),

    #[error("this request needs Authorization: Bearer <CHAJA_API_KEY>")]
    Unauthorized,

    #[error("the API key is not valid")]
    Forbidden,

    #[error("request body is too large (the limit is CHAJA_MAX_BODY_BYTES)")]
    PayloadTooLarge,

    #[error("too many requests from this client; slow down")]
    TooManyRequests,

    /// The client already has `CHAJA_MAX_IN_FLIGHT_PER_CLIENT` requests
    /// running.
    #[error("too many requests in flight from this client; wait for one to finish")]
    TooManyInFlight,

    #[error("{0}")]
    Conflict(String),

    /// The request is well formed but refers to something that does not exist.
    #[error("{0}")]
    Unprocessable(String),

    #[error("database error")]
    Database(#[from] sqlx::Error),

    #[error("index error")]
    Index(#[from] tantivy::TantivyError),

    /// Too much heavy work is waiting already; try again later.
    #[error("the server is busy with heavy searches; try again")]
    Overloaded,

    /// A search ran out of its time budget (the request timeout).
    #[error("the search took too long; try again")]
    SearchTimedOut,

    #[error("search worker failed")]
    Join(#[from] tokio::task::JoinError),

    #[error("i/o error")]
    Io(#[from] std::io::Error),

    /// Redis is configured for something only it holds, and is not answering.
    #[error("{0} needs redis, which is not answering; try again later")]
    RedisUnavailable(&'static str),

    /// The config file is missing, unreadable or wrong.
    #[error("config file: {0}")]
    Config(String),

    /// The Korean dictionary could not be built or loaded.
    #[error("korean dictionary: {0}")]
    Dictionary(String),

    /// One computation's error, shared by every request that waited on it.
    #[error("{0}")]
    Shared(std::sync::Arc<Error>),
}

impl Error {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Error {
        Error::BadRequest {
            code,
            message: message.into(),
        }
    }

    /// True when the database could not be reached or timed out: the request
    /// may succeed later, and nothing was written.
    pub fn is_unavailable(&self) -> bool {
        if let Error::Shared(inner) = self {
            return inner.is_unavailable();
        }
        matches!(
            self,
            Error::Database(
                sqlx::Error::Io(_)
                    | sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::WorkerCrashed
            )
        )
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            Error::Shared(inner) => inner.status_code(),
            Error::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::Forbidden => StatusCode::FORBIDDEN,
            Error::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Error::TooManyRequests | Error::TooManyInFlight => StatusCode::TOO_MANY_REQUESTS,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Error::RedisUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::SearchTimedOut | Error::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            e if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Error::Shared(inner) => inner.code(),
            Error::BadRequest { code, .. } => code,
            Error::NotFound(_) => "not_found",
            Error::Unauthorized => "unauthorized",
            Error::Forbidden => "forbidden",
            Error::PayloadTooLarge => "payload_too_large",
            Error::TooManyRequests => "rate_limited",
            Error::TooManyInFlight => "too_many_in_flight",
            Error::Conflict(_) => "conflict",
            Error::Unprocessable(_) => "unprocessable",
            Error::RedisUnavailable(_) => "redis_unavailable",
            Error::SearchTimedOut => "timeout",
            Error::Overloaded => "overloaded",
            e if e.is_unavailable() => "database_unavailable",
            _ => "internal",
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let message = match status {
            StatusCode::SERVICE_UNAVAILABLE if self.is_unavailable() => {
                tracing::warn!(error = ?self, "database unavailable");
                "the database is unavailable; nothing was written, try again later".to_owned()
            }
            StatusCode::INTERNAL_SERVER_ERROR => {
                tracing::error!(error = ?self, "request failed");
                "internal error".to_owned()
            }
            _ => self.to_string(),
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code().to_owned(),
                message,
            },
        };
        (status, Json(body)).into_response()
    }
}

impl From<crate::index::search::SearchError> for Error {
    fn from(e: crate::index::search::SearchError) -> Error {
        match e {
            crate::index::search::SearchError::Stopped => Error::SearchTimedOut,
            crate::index::search::SearchError::Index(e) => Error::Index(e),
        }
    }
}
