//! The HTTP API: the request flow's front, request → http → search → index.
//!
//! - [`search`]: `GET /api/search` (parameters checked once into an index
//!   request, the answer encoded) and trending; [`suggest`];
//!   [`health`] (`/healthz`, `/readyz`); [`admin`] (reindex, verify, the
//!   console's status); [`prometheus`] (`/metrics`); `web` (the pages and
//!   their assets).
//! - [`ops`]: the middleware around every request: keys by scope,
//!   per-client rate and in-flight caps, metrics, load shedding; [`client`]
//!   resolves who a request comes from (trusted proxies, IPv6 /64);
//!   `request_id` names each request for the logs.
//! - [`error`]: [`ApiError`], the one place an error becomes a status code
//!   and a `{"error": {code, message}}` body.
//!
//! Each module's `router()` is an `OpenApiRouter`, so the OpenAPI document
//! at `/api-docs/openapi.json` is built from the same handlers. Routes of
//! an application on top (the demo platform's) are passed in, already
//! given their own state.

pub mod admin;
pub mod client;
pub mod error;
mod extract;
pub mod health;
pub mod ops;
pub mod origin;
pub mod prometheus;
mod request_id;
pub mod search;
pub mod similar;
pub mod suggest;
pub mod web;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use chaja_mirror::MirrorHandle;
use chaja_search::SearchService;
use chaja_store::Db;

pub use error::{ApiError, ErrorBody};
pub use extract::{ApiJson, ApiPath, ApiQuery, ClientIp};
pub use ops::Keys;

/// What every handler shares, behind one `Arc`.
///
/// axum clones the router's state for each request. A struct of handles
/// would clone each handle (a dozen reference counts, each an atomic
/// add and later a subtract on a cache line every core writes); one `Arc`
/// is one. The cached answer path is short enough for that to show.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The handles behind [`AppState`].
pub struct Shared {
    /// For admin only (verify, rebuilds, replicas): no search takes a
    /// connection.
    pub db: Db,
    /// The answer path: index, cache, lane, cursors, trending, suggestions.
    pub search: SearchService,
    pub mirror: MirrorHandle,
    /// How rebuilds started over HTTP write their generation.
    pub rebuild: chaja_mirror::reindex::RebuildOptions,
    /// Past this much lag (the oldest change not applied yet), `/readyz`
    /// says not ready.
    pub max_lag: Duration,
    pub input: InputLimits,
    /// Query-time synonyms from the config file.
    pub synonyms: Arc<chaja_core::synonyms::Synonyms>,
    /// The rebuild and verification started through the admin API.
    pub operations: admin::Operations,
}

/// The OpenAPI document's frame; the paths come from the handlers.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "chaja",
        description = "Exact Korean substring search over MySQL rows, and the platform flow load tests drive. \
Limits: q ≤ 100 characters, size ≤ 100, page × size ≤ 10,000, title ≤ 200 and content ≤ 20,000 characters, JSON bodies ≤ 64 KiB, unknown fields rejected. \
Keys, sent as `Authorization: Bearer <key>`: CHAJA_SEARCH_KEY (when set) guards searches, suggestions and trending; CHAJA_WRITE_KEY (alias CHAJA_API_KEY, when set) guards writes; CHAJA_ADMIN_KEY guards /api/admin/* and /metrics, which answer loopback clients only while it is unset. \
Every error is `{\"error\": {\"code\", \"message\"}}`."
    ),
    components(schemas(crate::error::ErrorBody))
)]
pub struct ApiDoc;

/// The handlers' annotations, made as strict as the server: the configured
/// limits in place of the defaults the annotations name, and on every
/// operation the errors the layers around the handlers answer with (keys,
/// the rate limit, timeouts and overload, body size), so that a client or
/// a fuzzer reading the document expects what it gets.
fn document(
    api: utoipa::openapi::OpenApi,
    limits: &InputLimits,
    sources: &chaja_core::sources::Sources,
) -> serde_json::Value {
    use serde_json::{json, Value};
    let mut doc = serde_json::to_value(api).expect("the OpenAPI document serializes");
    let error = |description: &str| {
        json!({
            "description": description,
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } }
        })
    };
    if let Some(paths) = doc["paths"].as_object_mut() {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, operation) in item.iter_mut() {
                let Ok(method) = method.to_uppercase().parse::<axum::http::Method>() else {
                    continue;
                };
                let has_body = operation.get("requestBody").is_some();
                // `get_mut`, not indexing: `value["key"]` on an object
                // inserts a null where the key is missing.
                if let Some(parameters) = operation
                    .get_mut("parameters")
                    .and_then(Value::as_array_mut)
                {
                    for parameter in parameters {
                        let bound = match (path.as_str(), parameter["name"].as_str()) {
                            ("/api/search" | "/api/suggest", Some("q")) => {
                                Some(("maxLength", limits.max_query_chars))
                            }
                            ("/api/search", Some("size")) => Some(("maximum", limits.max_size)),
                            ("/api/search", Some("page")) => Some(("maximum", limits.max_depth)),
                            _ => None,
                        };
                        if let Some((keyword, value)) = bound {
                            parameter["schema"][keyword] = json!(value);
                        }
                        // The configured sources, so that a client (or a
                        // fuzzer) knows every `type` there is.
                        let searches = path == "/api/search" || path == "/api/similar";
                        if searches && parameter["name"] == "type" {
                            parameter["schema"] = type_enum(sources);
                        }
                        // A like search's row is of one source, never `all`.
                        if path == "/api/similar" && parameter["name"] == "source" {
                            let names: Vec<&str> = sources.names().collect();
                            parameter["schema"] = json!({ "type": "string", "enum": names });
                        }
                        // The orders there are: the built-in three and each
                        // sortable attribute both ways.
                        if path == "/api/search" && parameter["name"] == "sort" {
                            let mut orders: Vec<String> =
                                ["recent", "oldest", "relevance"].map(String::from).to_vec();
                            for name in sources.sortable_names() {
                                orders.push(format!("attr.{name}.desc"));
                                orders.push(format!("attr.{name}.asc"));
                            }
                            parameter["schema"] = json!({ "type": "string", "enum": orders });
                        }
                    }
                }
                let Some(responses) = operation
                    .get_mut("responses")
                    .and_then(Value::as_object_mut)
                else {
                    continue;
                };
                let mut add = |status: &str, description: &str| {
                    responses
                        .entry(status)
                        .or_insert_with(|| error(description));
                };
                if ops::needs_key(&method, path) {
                    add("401", "no key sent: `Authorization: Bearer <key>`");
                    add(
                        "403",
                        "a wrong key; admin from another machine, or under a Host that is not loopback or allowed, with no admin key set; a write sent by a page of another site",
                    );
                }
                if has_body {
                    add("413", "body over the size limit");
                }
                add("429", "over the per-client rate limit; see Retry-After");
                add("503", "timeout, overload, or a store that is down");
            }
        }
    }
    // Request bodies (the demo's writes) with a `title` or `content`
    // string get the configured write limits, whatever the schema is
    // called. Only request bodies: a hit's title is HTML and may be longer.
    let bodies: Vec<String> = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values())
        .filter_map(|operation| {
            operation
                .pointer("/requestBody/content/application~1json/schema/$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                .map(str::to_owned)
        })
        .collect();
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return doc;
    };
    // A like search's body filters by `type` as the query string does.
    if let Some(kind) = schemas
        .get_mut("SimilarBody")
        .and_then(|schema| schema.pointer_mut("/properties/type"))
    {
        *kind = type_enum(sources);
    }
    for (_, schema) in schemas.iter_mut().filter(|(name, _)| bodies.contains(name)) {
        for (field, max) in [
            ("title", limits.max_title_chars),
            ("content", limits.max_content_chars),
        ] {
            let property = schema
                .pointer_mut(&format!("/properties/{field}"))
                .and_then(Value::as_object_mut)
                .filter(|p| p.get("type") == Some(&Value::from("string")));
            if let Some(property) = property {
                property.insert("maxLength".to_owned(), Value::from(max));
            }
        }
    }
    doc
}

/// `type`'s values: the configured sources, so that a client (or a fuzzer)
/// knows every one there is, and `all`.
fn type_enum(sources: &chaja_core::sources::Sources) -> serde_json::Value {
    let mut types: Vec<&str> = sources.names().collect();
    types.push("all");
    serde_json::json!({ "type": "string", "enum": types })
}

/// Every module's routes, documented: served by `router`, described by
/// `openapi`.
fn api(extra: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(extra)
        .merge(search::router())
        .merge(similar::router())
        .merge(suggest::router())
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
    /// Hosts besides loopback for keyless admin and browser writes
    /// (`CHAJA_ALLOWED_HOSTS`; see `origin`).
    pub allowed_hosts: origin::AllowedHosts,
    /// Clients whose searches trending never counts
    /// (`CHAJA_TRENDING_EXCLUDE`).
    pub uncounted: client::Networks,
    /// Who a request comes from (trusted proxies).
    pub clients: client::ClientResolver,
    /// Requests per second per client; 0 is no limit.
    pub rate_per_second: u32,
    /// Requests in flight per client; 0 is no limit.
    pub in_flight_per_client: usize,
    pub timeout: Duration,
    /// Requests in flight before new ones get a 503.
    pub max_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            keys: Keys::default(),
            allowed_hosts: Default::default(),
            uncounted: Default::default(),
            clients: client::ClientResolver::default(),
            rate_per_second: 0,
            in_flight_per_client: 0,
            timeout: Duration::from_secs(10),
            max_in_flight: 1024,
        }
    }
}

/// The API, with `extra` routes beside chaja's own (the demo platform's,
/// when it is configured; see `app`).
pub fn router(state: AppState, limits: &Limits, extra: OpenApiRouter<AppState>) -> Router {
    let body_limit = state.input.max_body_bytes;
    prometheus::install();
    let guard = Arc::new(ops::Guard::new(
        limits.keys.clone(),
        limits.allowed_hosts.clone(),
        limits.uncounted.clone(),
        limits.clients.clone(),
        limits.rate_per_second,
        limits.in_flight_per_client,
    ));
    let (routes, api) = api(extra).split_for_parts();
    let api = document(api, &state.input, state.search.index.sources());
    routes
        // The reference page (Swagger UI, vendored in the binary) over the
        // document as served, limits included.
        .merge(
            utoipa_swagger_ui::SwaggerUi::new("/api-docs")
                .external_url_unchecked("/api-docs/openapi.json", api),
        )
        .merge(web::router())
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(guard, ops::guard))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(ops::overloaded))
                .load_shed()
                // Global: `Router::layer` wraps each route apart, so a plain
                // concurrency limit would be one per route.
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
                    limits.max_in_flight,
                ))
                .timeout(limits.timeout),
        )
        .layer(axum::middleware::from_fn(ops::record_metrics))
        .layer(PropagateRequestIdLayer::x_request_id())
        // No line per failed response: a 500 is logged where it happens
        // (`ApiError`, `ops::overloaded`), and under overload every shed
        // 503 was an ERROR line, 18k a second at 400 clients: 80–100 MB
        // of log in 20 s. Metrics count them.
        .layer(TraceLayer::new_for_http().on_failure(()))
        .layer(SetRequestIdLayer::x_request_id(
            request_id::RequestIds::new(),
        ))
}

/// Serves until `shutdown`, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    limits: &Limits,
    extra: OpenApiRouter<AppState>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = router(state, limits, extra).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
