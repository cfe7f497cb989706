//! The API's error, and the one place an error becomes a status code.
//!
//! Every error is `{"error": {"code", "message"}}`. Client mistakes are
//! 4xx with a message that says what to fix; a store that cannot be reached
//! is a 503; anything else is logged in full and shown as a bare 500. The
//! crates below answer with errors of their own ([`StoreError`],
//! [`SearchError`], [`MirrorError`], [`IndexError`]), which know nothing of
//! HTTP; they are mapped here.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use chaja_index::IndexError;
use chaja_mirror::MirrorError;
use chaja_search::SearchError;
use chaja_store::StoreError;

pub type Result<T, E = ApiError> = std::result::Result<T, E>;

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
pub enum ApiError {
    /// The request is malformed or breaks a limit.
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },

    #[error("{0} not found")]
    NotFound(&'static str),

    #[error("this request needs Authorization: Bearer <CHAJA_API_KEY>")]
    Unauthorized,

    #[error("the API key is not valid")]
    Forbidden,

    /// A write or admin request sent by a page of another site (its
    /// `Origin` or `Sec-Fetch-Site` says so).
    #[error("cross-site requests may not change anything here")]
    CrossSite,

    /// Keyless admin asked for under a name that is neither loopback nor
    /// in `CHAJA_ALLOWED_HOSTS` (a DNS-rebinding page would).
    #[error("admin without CHAJA_ADMIN_KEY answers only under a loopback Host or one in CHAJA_ALLOWED_HOSTS")]
    HostNotAllowed,

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

    #[error(transparent)]
    Store(#[from] StoreError),

    #[error(transparent)]
    Index(#[from] IndexError),

    #[error(transparent)]
    Search(#[from] SearchError),

    #[error(transparent)]
    Mirror(#[from] MirrorError),

    #[error("worker failed")]
    Join(#[from] tokio::task::JoinError),
}

impl ApiError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::BadRequest {
            code,
            message: message.into(),
        }
    }

    /// True when the database could not be reached or timed out: the request
    /// may succeed later, and nothing was written.
    pub fn is_unavailable(&self) -> bool {
        match self {
            ApiError::Store(e) => e.is_unavailable(),
            ApiError::Mirror(e) => e.is_unavailable(),
            _ => false,
        }
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden | ApiError::CrossSite | ApiError::HostNotAllowed => {
                StatusCode::FORBIDDEN
            }
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRequests | ApiError::TooManyInFlight => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Conflict(_) | ApiError::Mirror(MirrorError::RebuildRunning) => {
                StatusCode::CONFLICT
            }
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Search(e) => search_status(e),
            e if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest { code, .. } => code,
            ApiError::NotFound(_) => "not_found",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden => "forbidden",
            ApiError::CrossSite => "cross_site",
            ApiError::HostNotAllowed => "host_not_allowed",
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::TooManyRequests => "rate_limited",
            ApiError::TooManyInFlight => "too_many_in_flight",
            ApiError::Conflict(_) | ApiError::Mirror(MirrorError::RebuildRunning) => "conflict",
            ApiError::Unprocessable(_) => "unprocessable",
            ApiError::Search(e) => search_code(e),
            e if e.is_unavailable() => "database_unavailable",
            _ => "internal",
        }
    }
}

fn search_status(e: &SearchError) -> StatusCode {
    match e {
        SearchError::Shared(inner) => search_status(inner),
        SearchError::Overloaded | SearchError::TimedOut | SearchError::RedisUnavailable(_) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        // The walk's point in time is gone for good: start it again.
        SearchError::CursorExpired => StatusCode::GONE,
        SearchError::NotFound(_) => StatusCode::NOT_FOUND,
        // The index could not read a row back: no answer rather than a
        // wrong total; another replica, or a rebuild, can answer.
        SearchError::Index(chaja_index::IndexError::Unreadable(_)) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Whether the search was shed (its line was full), not failed.
fn is_shed(e: &SearchError) -> bool {
    match e {
        SearchError::Shared(inner) => is_shed(inner),
        e => matches!(e, SearchError::Overloaded),
    }
}

fn search_code(e: &SearchError) -> &'static str {
    match e {
        SearchError::Shared(inner) => search_code(inner),
        SearchError::Overloaded => "overloaded",
        SearchError::TimedOut => "timeout",
        SearchError::RedisUnavailable(_) => "redis_unavailable",
        SearchError::CursorExpired => "cursor_expired",
        SearchError::NotFound(_) => "not_found",
        SearchError::Index(chaja_index::IndexError::Unreadable(_)) => "index_unreadable",
        _ => "internal",
    }
}

impl IntoResponse for ApiError {
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
            _ if self.code() == "index_unreadable" => {
                tracing::error!(error = ?self, "the index could not read a row back");
                "the index could not read a matching row back; no answer was given rather than a wrong one, try again later".to_owned()
            }
            _ => self.to_string(),
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code().to_owned(),
                message,
            },
        };
        let overloaded = matches!(&self, ApiError::Search(e) if is_shed(e));
        let mut response = (status, Json(body)).into_response();
        if overloaded {
            // Shed, not failed: the line is short again within a second.
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}
