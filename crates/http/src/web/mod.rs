//! The pages `chaja serve` shows in a browser: the search page (`/`), the
//! operator console (`/console`) and the API reference (`/api-docs`).
//!
//! The pages are plain HTML, CSS and JavaScript modules compiled into the
//! binary (`include_str!`: six files do not need an embedding crate), so
//! they need no build step, no CDN and no network. They only call the
//! JSON API, the same one any client calls; the console's data comes from
//! `/api/admin/*`, so its page shell is public and its numbers need the
//! admin key.
//!
//! The page never inserts server text as HTML: titles and snippets arrive
//! escaped, with `<em>` highlights, and `api.js` turns exactly that markup
//! into elements. A strict Content-Security-Policy (scripts and styles from
//! this origin only, no inline code) backs that up.

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;

/// Scripts, styles and requests from this origin only; no inline script,
/// no framing.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The pages' routes; public (their data endpoints carry the keys).
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { page(include_str!("assets/index.html")) }),
        )
        .route(
            "/console",
            get(|| async { page(include_str!("assets/console.html")) }),
        )
        .route("/assets/{name}", get(asset))
}

/// An embedded page, with the pages' headers (the policy above): for an
/// application on top (the demo) that adds pages of its own.
pub fn page(html: &'static str) -> Response {
    with_headers(html, "text/html; charset=utf-8", "no-cache")
}

/// An embedded JavaScript module, with the pages' headers.
pub fn javascript(js: &'static str) -> Response {
    with_headers(js, JAVASCRIPT, "no-cache")
}

/// The embedded files by name; anything else is a JSON 404.
async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "style.css" => (include_str!("assets/style.css"), "text/css; charset=utf-8"),
        "api.js" => (include_str!("assets/api.js"), JAVASCRIPT),
        "search.js" => (include_str!("assets/search.js"), JAVASCRIPT),
        "console.js" => (include_str!("assets/console.js"), JAVASCRIPT),
        _ => return ApiError::NotFound("asset").into_response(),
    };
    // Not immutable: the names carry no version, so a new binary's files
    // must replace the old ones on the next load.
    with_headers(body, kind, "no-cache")
}

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

fn with_headers(body: &'static str, kind: &'static str, cache: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("same-origin"),
            ),
        ],
        body,
    )
        .into_response()
}
