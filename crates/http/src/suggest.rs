//! `GET /api/suggest`: completions while typing. Reads an in-memory
//! snapshot only (see `chaja_search::suggest`).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiQuery, AppState};
use crate::error::{ApiError, ErrorBody, Result};
use chaja_search::suggest::{Suggestion, MAX_LIMIT};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(suggest_handler))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SuggestParams {
    /// What has been typed so far: a prefix, 초성 (`ㅋㄹㅇㄷ`), a half-typed
    /// syllable (`클라ㅇ`) or Hangul typed on a Latin layout (`zmffkdnem`).
    /// Not blank; at most `max_query_chars` (100 by default) characters.
    #[param(min_length = 1, max_length = 100, pattern = r"\S")]
    pub q: String,
    /// 1 to 50; default 10.
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SuggestResponse {
    pub suggestions: Vec<Suggestion>,
}

/// Completions from titles and popular searches, most popular first.
#[utoipa::path(get, path = "/api/suggest", tag = "search", params(SuggestParams), responses((status = 200, body = SuggestResponse), (status = 400, description = "empty or too long q, bad limit", body = ErrorBody)))]
async fn suggest_handler(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<SuggestParams>,
) -> Result<Json<SuggestResponse>> {
    let limit = params.limit.unwrap_or(10);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_limit",
            format!("limit must be between 1 and {MAX_LIMIT}"),
        ));
    }
    let q = params.q.trim();
    if q.is_empty() {
        return Err(ApiError::bad_request("empty_query", "q must not be empty"));
    }
    let max = state.input.max_query_chars;
    if q.chars().count() > max {
        return Err(ApiError::bad_request(
            "query_too_long",
            format!("q must be at most {max} characters"),
        ));
    }
    // Bounded, but CPU work: off the async workers.
    let (suggester, q) = (state.search.suggester.clone(), q.to_owned());
    let suggestions = tokio::task::spawn_blocking(move || suggester.suggest(&q, limit)).await?;
    Ok(Json(SuggestResponse { suggestions }))
}
