//! axum's extractors, with their rejections turned into the API's JSON error.

use std::convert::Infallible;
use std::net::IpAddr;

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::request::Parts;

use crate::error::ApiError;

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        match r {
            JsonRejection::BytesRejection(_)
                if r.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE =>
            {
                ApiError::PayloadTooLarge
            }
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::bad_request("unsupported_media_type", r.body_text())
            }
            _ => ApiError::bad_request("invalid_json", r.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    /// A parameter that does not parse of a closed set is named in the
    /// code, as the handlers' own checks name it (`invalid_size`,
    /// `invalid_sort`): axum reports the field's path first (`size: invalid
    /// digit found`).
    fn from(r: QueryRejection) -> ApiError {
        let text = r.body_text();
        let detail = text
            .strip_prefix("Failed to deserialize query string: ")
            .unwrap_or(&text);
        let code = match detail.split_once(": ").map(|(field, _)| field) {
            Some("type") => "invalid_type",
            Some("sort") => "invalid_sort",
            Some("match") => "invalid_match",
            Some("window") => "invalid_window",
            Some("size") => "invalid_size",
            Some("page") => "invalid_page",
            Some("limit") => "invalid_limit",
            _ => "invalid_query",
        };
        ApiError::bad_request(code, text)
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> ApiError {
        ApiError::bad_request("invalid_path", r.body_text())
    }
}

/// The client's key (see `client::Client`), as the guard resolved it:
/// through trusted proxies, IPv6 cut to its /64; `None` for a request
/// whose searches trending does not count (the admin key, an excluded
/// address).
pub struct ClientIp(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        if parts.extensions.get::<crate::ops::Uncounted>().is_some() {
            return Ok(ClientIp(None));
        }
        let client = parts.extensions.get::<super::client::Client>();
        Ok(ClientIp(client.map(|c| c.key)))
    }
}
