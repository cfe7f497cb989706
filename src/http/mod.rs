//! The request flow: HTTP → (cache) → index → response, plus the platform's
//! writes, which go to the database only.

mod extract;
pub mod health;
pub mod platform;
pub mod search;

use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::trace::TraceLayer;

use crate::cache::SearchCache;
use crate::db::Db;
use crate::index::SearchIndex;
use crate::mirror::MirrorHandle;

pub use extract::{ApiJson, ApiPath, ApiQuery};

/// Cheap, cloneable handles shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub cache: SearchCache,
    pub index: SearchIndex,
    pub mirror: MirrorHandle,
    /// Signs search cursors, so a changed cursor is a 400.
    pub cursor_key: Arc<[u8; 32]>,
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(search::router())
        .merge(platform::router())
        .merge(health::router())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves until `shutdown`, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
