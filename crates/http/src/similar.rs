//! `GET /api/similar` and `POST /api/similar`: posts like a row, or like a
//! text not stored yet (see `chaja_index::search::similar`). Like a
//! search, it reads only the cache and the index.

use std::time::Instant;

use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use chaja_core::sources::Sources;
use chaja_index::search::similar::{Analysis, SimilarHit, SimilarInput, SimilarRequest, MAX_SIZE};
use chaja_search::cache::CacheStatus;
use chaja_search::Asked;

use crate::error::{ApiError, ErrorBody, Result};
use crate::search::{
    filter_of, split_attribute_params, AttributeBounds, AttributeFilters, HitBody,
};
use crate::{AppState, ClientIp};

/// The longest text a like search takes, in characters: a long post, and
/// a bound on what one request can make the analyzer do.
pub const MAX_SIMILAR_TEXT_CHARS: usize = 10_000;

/// Hits when `size` is not given.
const DEFAULT_SIZE: usize = 5;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(similar_get, similar_post))
}

/// A like search's parameters. `attr.<name>=<value>` and
/// `attr.<name>.gte/lte` filters are read as a search's are.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SimilarParams {
    /// With `id`: the source of the row to find posts like (left out of
    /// the results).
    #[param(min_length = 1, max_length = 64, pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")]
    pub source: Option<String>,
    /// With `source`: the row's key.
    #[param(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub id: Option<String>,
    /// Or a text not stored yet (a question being written), at most
    /// 10,000 characters.
    #[param(
        min_length = 1,
        max_length = 10000,
        pattern = r"^[^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*[^\s\x00-\x1F\x7F-\x9F\uFFFD][^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*$"
    )]
    pub text: Option<String>,
    /// With `text`: its title, whose words weigh more.
    #[param(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*$"
    )]
    pub title: Option<String>,
    /// A source's name, or `all` (default): the results' type.
    #[serde(rename = "type")]
    #[param(min_length = 1, max_length = 64, pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")]
    pub kind: Option<String>,
    /// RFC 3339 bounds on the results' `created_at`, inclusive.
    #[param(format = DateTime)]
    pub from: Option<String>,
    #[param(format = DateTime)]
    pub to: Option<String>,
    /// Hits: 1 to 20; default 5.
    #[param(minimum = 1, maximum = 20)]
    pub size: Option<usize>,
}

/// A like search of a text, in a body (for texts too long for a URL).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarBody {
    /// The text, at most 10,000 characters.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = r"^[^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*[^\s\x00-\x1F\x7F-\x9F\uFFFD][^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*$"
    )]
    pub text: String,
    /// Its title, whose words weigh more.
    #[schema(
        max_length = 200,
        pattern = r"^[^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*$"
    )]
    pub title: Option<String>,
    /// A source's name, or `all` (default).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// RFC 3339 bounds on the results' `created_at`, inclusive.
    #[schema(format = DateTime)]
    pub from: Option<String>,
    #[schema(format = DateTime)]
    pub to: Option<String>,
    /// Hits: 1 to 20; default 5.
    #[schema(minimum = 1, maximum = 20)]
    pub size: Option<usize>,
}

/// One post like the input: a search hit's fields, its score and the terms
/// it shares with the input.
#[derive(Debug, Serialize, ToSchema)]
pub struct SimilarHitBody {
    #[serde(flatten)]
    pub hit: HitBody,
    /// BM25 over the shared terms, raised by the share of the input's
    /// weight the post holds: higher is more alike.
    pub score: f32,
    /// The terms that made it similar, the weightiest first.
    pub because: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SimilarResponse {
    pub hits: Vec<SimilarHitBody>,
    pub took_ms: f64,
    /// `morphemes`: content morphemes of the Korean dictionary; `words`:
    /// plain words, without one.
    #[schema(value_type = String, example = "morphemes")]
    pub analysis: &'static str,
    pub cache: CacheStatus,
}

/// Posts like a row (`source` and `id`) or like a text (`text`, and
/// `title`), best first, filtered as a search is.
#[utoipa::path(get, path = "/api/similar", tag = "search", params(SimilarParams), responses((status = 200, description = "posts like the input, best first; never touches the database", body = SimilarResponse), (status = 400, description = "no input, both inputs, an empty or over-long text, or a bad filter or size", body = ErrorBody), (status = 404, description = "the row is not in the index", body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, description = "timeout or overload", body = ErrorBody)))]
async fn similar_get(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<([(HeaderName, HeaderValue); 1], Vec<u8>)> {
    let started = Instant::now();
    let (params, attributes, bounds) = split_attribute_params::<SimilarParams>(raw.as_deref())?;
    let SimilarParams {
        source,
        id,
        text,
        title,
        kind,
        from,
        to,
        size,
    } = params;
    let sources = state.search.index.sources().clone();
    let input = match (source, id, text) {
        (Some(source), Some(id), None) => row_input(&source, id, title.is_some(), &sources)?,
        (None, None, Some(text)) => text_input(text, title)?,
        _ => {
            return Err(bad(
                "invalid_input",
                "give either source and id, or text (and title), not both",
            ))
        }
    };
    let narrowing = Narrowing {
        kind,
        from,
        to,
        size,
        attributes,
        bounds,
    };
    let request = narrowing.request(input, &sources)?;
    answer(&state, request, client, started, &sources).await
}

/// Posts like a text in the body; filters as a search's, `attr.*` in the
/// query string.
#[utoipa::path(post, path = "/api/similar", tag = "search", request_body = SimilarBody, responses((status = 200, description = "posts like the text, best first; never touches the database", body = SimilarResponse), (status = 400, description = "an empty or over-long text, or a bad filter or size", body = ErrorBody), (status = 413, description = "a body over the size limit", body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, description = "timeout or overload", body = ErrorBody)))]
async fn similar_post(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    crate::extract::ApiJson(body): crate::extract::ApiJson<SimilarBody>,
) -> Result<([(HeaderName, HeaderValue); 1], Vec<u8>)> {
    let started = Instant::now();
    let (_, attributes, bounds) = split_attribute_params::<NoParams>(raw.as_deref())?;
    let SimilarBody {
        text,
        title,
        kind,
        from,
        to,
        size,
    } = body;
    let sources = state.search.index.sources().clone();
    let narrowing = Narrowing {
        kind,
        from,
        to,
        size,
        attributes,
        bounds,
    };
    let request = narrowing.request(text_input(text, title)?, &sources)?;
    answer(&state, request, client, started, &sources).await
}

/// What both forms of a like search ask besides their input: the filters
/// of a search, and how many hits.
struct Narrowing {
    kind: Option<String>,
    from: Option<String>,
    to: Option<String>,
    size: Option<usize>,
    attributes: AttributeFilters,
    bounds: AttributeBounds,
}

impl Narrowing {
    /// The like search of `input`, its filters and size checked.
    fn request(self, input: SimilarInput, sources: &Sources) -> Result<SimilarRequest> {
        let Narrowing {
            kind,
            from,
            to,
            size,
            attributes,
            bounds,
        } = self;
        let filter = filter_of(
            kind.as_deref(),
            &attributes,
            &bounds,
            (from.as_deref(), to.as_deref()),
            sources,
        )?;
        Ok(SimilarRequest {
            input,
            filter,
            size: checked_size(size)?,
        })
    }
}

/// A POST's query string holds `attr.*` filters only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

async fn answer(
    state: &AppState,
    request: SimilarRequest,
    client: Option<std::net::IpAddr>,
    started: Instant,
    sources: &Sources,
) -> Result<([(HeaderName, HeaderValue); 1], Vec<u8>)> {
    let asked = Asked {
        snapshot: None,
        q: "",
        client,
        started,
    };
    let encode = {
        let sources = sources.clone();
        Box::new(move |found: SimilarHit| {
            let SimilarHit {
                hit,
                score,
                because,
            } = found;
            let body = SimilarHitBody {
                hit: HitBody::new(hit, &sources),
                score,
                because,
            };
            serde_json::value::to_raw_value(&body).expect("a hit serializes to json")
        })
    };
    let served = state.search.similar(&request, asked, encode).await?;
    // The shape of `SimilarResponse`, with the hits' JSON as cached.
    #[derive(Serialize)]
    struct Body<'a> {
        hits: &'a [Box<serde_json::value::RawValue>],
        took_ms: f64,
        analysis: &'static str,
        cache: CacheStatus,
    }
    let body = serde_json::to_vec(&Body {
        hits: &served.answer.hits,
        took_ms: started.elapsed().as_secs_f64() * 1000.0,
        analysis: Analysis::of_process().name(),
        cache: served.cache,
    })
    .expect("a like search's answer serializes to json");
    let headers = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )];
    Ok((headers, body))
}

fn row_input(source: &str, id: String, has_title: bool, sources: &Sources) -> Result<SimilarInput> {
    if has_title {
        return Err(bad("invalid_input", "title goes with text, not with an id"));
    }
    let source = sources.by_name(source).ok_or_else(|| {
        bad(
            "invalid_type",
            format!(
                "source must be one of: {}",
                sources.names().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    if id.trim().is_empty() || id.chars().count() > 200 || id.chars().any(char::is_control) {
        return Err(bad("invalid_id", "id must be 1 to 200 characters of text"));
    }
    Ok(SimilarInput::Row { source, key: id })
}

/// A text input, checked before any analysis: not empty, not over
/// [`MAX_SIMILAR_TEXT_CHARS`], no control characters but whitespace.
fn text_input(text: String, title: Option<String>) -> Result<SimilarInput> {
    let checked = |name: &str, value: &str, max: usize| -> Result<()> {
        if value.chars().count() > max {
            return Err(bad(
                "text_too_long",
                format!("{name} must be at most {max} characters"),
            ));
        }
        if value
            .chars()
            .any(|c| (c.is_control() && !c.is_whitespace()) || c == char::REPLACEMENT_CHARACTER)
        {
            return Err(bad("invalid_text", format!("{name} must be valid text")));
        }
        Ok(())
    };
    checked("text", &text, MAX_SIMILAR_TEXT_CHARS)?;
    if let Some(title) = &title {
        checked("title", title, 200)?;
    }
    if text.trim().is_empty() && title.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(bad("empty_text", "text must hold some words"));
    }
    Ok(SimilarInput::Text { title, body: text })
}

fn checked_size(size: Option<usize>) -> Result<usize> {
    let size = size.unwrap_or(DEFAULT_SIZE);
    if !(1..=MAX_SIZE).contains(&size) {
        return Err(bad(
            "invalid_size",
            format!("size must be between 1 and {MAX_SIZE}"),
        ));
    }
    Ok(size)
}

fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, message)
}
