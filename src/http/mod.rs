//! The request flow: HTTP → (cache) → index → response, plus the platform's
//! writes, which go to the database only.

pub mod admin;
mod extract;
pub mod health;
pub mod ops;
pub mod platform;
pub mod prometheus;
pub mod search;
pub mod suggest;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::cache::trending::Trending;
use crate::cache::SearchCache;
use crate::db::Db;
use crate::index::SearchIndex;
use crate::mirror::MirrorHandle;
use crate::suggest::Suggester;

pub use extract::{ApiJson, ApiPath, ApiQuery, ClientIp};
pub use ops::Keys;

/// Cheap, cloneable handles shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub cache: SearchCache,
    pub trending: Trending,
    pub suggester: Suggester,
    pub index: SearchIndex,
    pub mirror: MirrorHandle,
    /// Signs search cursors, so a changed cursor is a 400.
    pub cursor_key: Arc<[u8; 32]>,
    /// Index writer memory for rebuilds started over HTTP.
    pub writer_memory: usize,
    pub input: InputLimits,
}

/// The OpenAPI document's frame; the paths come from the handlers.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "chaja",
        description = "Exact Korean substring search over MySQL rows, and the platform flow load tests drive. \
Limits: q ≤ 100 characters, size ≤ 100, page × size ≤ 10,000, title ≤ 200 and content ≤ 20,000 characters, JSON bodies ≤ 64 KiB, unknown fields rejected. \
With CHAJA_API_KEY set, writes and /api/admin/* need `Authorization: Bearer <key>`. \
Every error is `{\"error\": {\"code\", \"message\"}}`."
    ),
    components(schemas(crate::error::ErrorBody))
)]
pub struct ApiDoc;

/// The OpenAPI document the server serves at `/api-docs/openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().into_openapi()
}

/// Every module's routes, documented: served by `router`, described by
/// `openapi`.
fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(search::router())
        .merge(suggest::router())
        .merge(platform::router())
        .merge(health::router())
        .merge(admin::router())
        .merge(prometheus::router())
}

/// Limits on what a request may carry; each breach is a 4xx that says which.
#[derive(Clone, Copy, Debug)]
pub struct InputLimits {
    pub max_query_chars: usize,
    pub max_size: usize,
    /// Deepest `page × size` served by page numbers; deeper needs a cursor.
    pub max_depth: usize,
    pub max_title_chars: usize,
    pub max_content_chars: usize,
    pub max_body_bytes: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_query_chars: 100,
            max_size: 100,
            max_depth: 10_000,
            max_title_chars: 200,
            max_content_chars: 20_000,
            max_body_bytes: 64 * 1024,
        }
    }
}

/// Limits around every request.
#[derive(Clone, Debug)]
pub struct Limits {
    pub keys: Keys,
    /// Requests per second per client IP; 0 is no limit.
    pub rate_per_second: u32,
    pub timeout: Duration,
    /// Requests in flight before new ones get a 503.
    pub max_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            keys: Keys::default(),
            rate_per_second: 0,
            timeout: Duration::from_secs(10),
            max_in_flight: 1024,
        }
    }
}

pub fn router(state: AppState, limits: &Limits) -> Router {
    let body_limit = state.input.max_body_bytes;
    prometheus::install();
    let guard = ops::Guard::new(limits.keys.clone(), limits.rate_per_second);
    let (routes, api) = api().split_for_parts();
    let api = Arc::new(api);
    routes
        .route(
            "/api-docs/openapi.json",
            axum::routing::get(move || async move { axum::Json(api.as_ref().clone()) }),
        )
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(guard, ops::guard))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(ops::overloaded))
                .load_shed()
                .concurrency_limit(limits.max_in_flight)
                .timeout(limits.timeout),
        )
        .layer(axum::middleware::from_fn(ops::record_metrics))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// Serves until `shutdown`, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    limits: &Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = router(state, limits).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
