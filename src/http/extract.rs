//! axum's extractors, with their rejections turned into the API's JSON error.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts};

use crate::error::Error;

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(Error))]
pub struct ApiJson<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(Error))]
pub struct ApiQuery<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(Error))]
pub struct ApiPath<T>(pub T);

impl From<JsonRejection> for Error {
    fn from(r: JsonRejection) -> Error {
        let code = match r {
            JsonRejection::MissingJsonContentType(_) => "unsupported_media_type",
            JsonRejection::BytesRejection(_) => "body_too_large",
            _ => "invalid_json",
        };
        Error::bad_request(code, r.body_text())
    }
}

impl From<QueryRejection> for Error {
    fn from(r: QueryRejection) -> Error {
        Error::bad_request("invalid_query", r.body_text())
    }
}

impl From<PathRejection> for Error {
    fn from(r: PathRejection) -> Error {
        Error::bad_request("invalid_path", r.body_text())
    }
}
