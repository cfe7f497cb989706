//! `GET /api/search`: the hot path. It reads only the index: no database
//! connection is taken to answer a search.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::{ApiQuery, AppState};
use crate::cache::{Answer, CacheStatus};
use crate::error::{Error, Result};
use crate::index::search::{self, Filter, Hit, Request};
use crate::model::Kind;
use crate::text::parse_query;

pub const MAX_QUERY_CHARS: usize = 100;
pub const MAX_SIZE: usize = 100;
/// Deepest `page × size` served by page numbers; deeper needs a cursor.
pub const MAX_DEPTH: usize = 10_000;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/search", get(search_handler))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    pub q: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub size: Option<usize>,
    pub page: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct SearchResponse {
    pub total: u64,
    pub hits: Vec<HitBody>,
    pub took_ms: f64,
    pub cache: CacheStatus,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HitBody {
    #[serde(rename = "type")]
    pub kind: Kind,
    pub id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question_id: Option<i64>,
    pub title: Option<String>,
    pub snippet: String,
    pub created_at: String,
}

impl From<Hit> for HitBody {
    fn from(hit: Hit) -> HitBody {
        HitBody {
            kind: hit.kind,
            id: hit.id,
            question_id: hit.question_id,
            title: hit.title,
            snippet: hit.snippet,
            created_at: crate::model::rfc3339(hit.created_at),
        }
    }
}

/// Checks the parameters and turns them into an index request.
pub fn to_request(params: &SearchParams) -> Result<Request> {
    let q = params.q.as_deref().unwrap_or("");
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::bad_request(
            "query_too_long",
            format!("q must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    if q.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return Err(Error::bad_request(
            "invalid_query",
            "q must not contain control characters",
        ));
    }
    // The query-string decoder replaces invalid UTF-8 with U+FFFD.
    if q.contains(char::REPLACEMENT_CHARACTER) {
        return Err(Error::bad_request("invalid_query", "q must be valid UTF-8"));
    }
    let keywords = parse_query(q);
    if keywords.is_empty() {
        return Err(Error::bad_request(
            "empty_query",
            "q must contain a keyword",
        ));
    }
    let kind = match params.kind.as_deref() {
        None | Some("all") => None,
        Some(other) => Some(Kind::parse(other).ok_or_else(|| {
            Error::bad_request("invalid_type", "type must be question, review or all")
        })?),
    };
    let size = params.size.unwrap_or(10);
    if !(1..=MAX_SIZE).contains(&size) {
        return Err(Error::bad_request(
            "invalid_size",
            format!("size must be between 1 and {MAX_SIZE}"),
        ));
    }
    let page = params.page.unwrap_or(1);
    if page == 0 {
        return Err(Error::bad_request("invalid_page", "page starts at 1"));
    }
    if page.saturating_mul(size) > MAX_DEPTH {
        return Err(Error::bad_request(
            "too_deep",
            format!("page × size must be at most {MAX_DEPTH}"),
        ));
    }
    Ok(Request {
        keywords,
        filter: Filter {
            kind,
            ..Filter::default()
        },
        offset: (page - 1) * size,
        limit: size,
        after: None,
    })
}

/// The cache key: everything that changes the answer, normalized.
fn cache_key(request: &Request) -> String {
    let keywords: Vec<&str> = request.keywords.iter().map(|k| k.as_str()).collect();
    let kind = request.filter.kind.map_or("all", Kind::as_str);
    // JSON quoting keeps keywords with spaces or separators unambiguous.
    serde_json::json!([keywords, kind, request.offset, request.limit]).to_string()
}

async fn search_handler(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> Result<Json<SearchResponse>> {
    let started = Instant::now();
    let request = to_request(&params)?;
    let run = |watermark: i64| {
        let generation = state.index.live();
        let request = request.clone();
        let span = tracing::Span::current();
        async move {
            let response = tokio::task::spawn_blocking(move || {
                let _enter = span.enter();
                search::search(&generation, &request)
            })
            .await??;
            Ok(Answer {
                total: response.total,
                hits: response.hits.into_iter().map(HitBody::from).collect(),
                watermark,
                computed_at_ms: crate::db::now_ms(),
            })
        }
    };
    // Only first pages are cached: deep pages are rare and would crowd out
    // the hot set.
    let (answer, freshness) = if request.offset == 0 {
        state
            .cache
            .get_or_compute(&cache_key(&request), run)
            .await?
    } else {
        let watermark = state.mirror.progress.applied_seq();
        (
            Arc::new(run(watermark).await?),
            CacheStatus {
                hit: false,
                age_ms: 0,
            },
        )
    };
    Ok(Json(SearchResponse {
        total: answer.total,
        hits: answer.hits.clone(),
        took_ms: started.elapsed().as_secs_f64() * 1000.0,
        cache: freshness,
    }))
}
