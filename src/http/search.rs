//! `GET /api/search`: the hot path. It reads only the cache and the index:
//! no database connection is taken to answer a search.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiQuery, AppState, ClientIp, InputLimits};
use crate::cache::trending::{Trend, Window};
use crate::cache::{Answer, CacheStatus};
use crate::error::{Error, ErrorBody, Result};
use crate::index::search::{self, Filter, Hit, Rank, Request, SearchKey, Sort};
use crate::sources::Sources;
use crate::synonyms::Synonyms;
use crate::text::parse_query;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_handler))
        .routes(routes!(trending_handler))
        .routes(routes!(zero_results_handler))
}

/// The search parameters. `attr.<name>=<value>` parameters (an attribute
/// a source keeps, such as `attr.member_id=7`) are taken out of the query
/// string before the rest is read into this (see [`split_attributes`]).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Keywords, all required; `"quoted words"` are one keyword with their
    /// spaces. At most `max_query_chars` (100 by default) characters, with
    /// something besides spaces and quotes, and no control characters other
    /// than whitespace. (The document states what `to_request` checks.)
    #[param(
        required = true,
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*[^\s\x00-\x1F\x7F-\x9F\x22\uFFFD][^\x00-\x08\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFD]*$"
    )]
    pub q: Option<String>,
    /// A source's name (`question`, `review` in the demo), or `all`
    /// (default).
    #[serde(rename = "type")]
    #[param(min_length = 1, max_length = 64, pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")]
    pub kind: Option<String>,
    #[param(inline)]
    pub sort: Option<SortParam>,
    /// RFC 3339 bounds on `created_at`, inclusive; `from` not after `to`.
    #[param(format = DateTime)]
    pub from: Option<String>,
    #[param(format = DateTime)]
    pub to: Option<String>,
    /// Hits per page: 1 to `max_size` (100 by default); default 10.
    #[param(minimum = 1, maximum = 100)]
    pub size: Option<usize>,
    /// From 1; `page × size` at most `max_depth` (10,000 by default).
    #[param(minimum = 1, maximum = 10000)]
    pub page: Option<usize>,
    /// `next_cursor` of the previous answer, for the same query; not with
    /// `page`.
    #[param(
        min_length = 3,
        max_length = 512,
        pattern = r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"
    )]
    pub cursor: Option<String>,
    #[serde(rename = "match")]
    #[param(inline)]
    pub match_mode: Option<MatchParam>,
    /// `false`: no synonyms, only the keywords as typed. Default `true`
    /// (the configured groups; see `expanded` in the answer).
    pub synonyms: Option<bool>,
    /// `attr.<name>=<value>` filters, in the order given.
    #[serde(skip)]
    #[param(ignore)]
    pub attributes: Vec<(String, String)>,
}

/// Attribute filters a request may carry, and how long a value may be.
const MAX_ATTRIBUTE_FILTERS: usize = 8;
const MAX_ATTRIBUTE_CHARS: usize = 200;

/// Reads a search query string: `attr.<name>` pairs apart, the rest into
/// [`SearchParams`] the way axum's `Query` reads it (the same errors).
pub fn split_attributes(raw: Option<&str>) -> Result<SearchParams> {
    let mut attributes = Vec::new();
    let mut rest = form_urlencoded::Serializer::new(String::new());
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match name.strip_prefix("attr.") {
            Some(attribute) => attributes.push((attribute.to_owned(), value.into_owned())),
            None => {
                rest.append_pair(&name, &value);
            }
        }
    }
    let uri: axum::http::Uri = format!("/?{}", rest.finish())
        .parse()
        .map_err(|_| bad("invalid_query", "the query string is malformed"))?;
    let axum::extract::Query(mut params) =
        axum::extract::Query::<SearchParams>::try_from_uri(&uri).map_err(Error::from)?;
    params.attributes = attributes;
    Ok(params)
}

/// `recent` (default): newest first. `oldest`. `relevance`: BM25 over
/// morphemes with a recency factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortParam {
    Recent,
    Oldest,
    Relevance,
}

/// `substring` (default): rows that contain the text, as LIKE. `morph`:
/// also rows that share its content morphemes (`클라우드를` finds
/// `클라우드에서`), exact matches first under `sort=relevance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MatchParam {
    Substring,
    Morph,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResponse {
    pub total: u64,
    /// `total` by type; the counts sum to it.
    pub totals: TypeTotals,
    pub hits: Vec<HitBody>,
    /// Present when synonyms widened the query: every keyword and synonym
    /// searched for, keywords first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded: Option<Vec<String>>,
    /// Present when a first page found little (at most `LOW_RESULTS`) and
    /// other queries find something: the query typed on a Latin layout,
    /// the words its 초성 stand for, the nearest known word. Never applied
    /// in place of the query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub did_you_mean: Option<Vec<Alternative>>,
    /// Continues after the last hit; null when this page was the last.
    pub next_cursor: Option<String>,
    pub took_ms: f64,
    pub cache: CacheStatus,
}

/// Matching rows by type (source name), exact, for tabs such as 질문 /
/// 리뷰; every configured source is present.
pub type TypeTotals = std::collections::BTreeMap<String, u64>;

/// Counts by source position, named.
pub fn type_totals(sources: &Sources, counts: &[u64]) -> TypeTotals {
    sources
        .names()
        .enumerate()
        .map(|(i, name)| (name.to_owned(), counts.get(i).copied().unwrap_or(0)))
        .collect()
}

/// A query that may be what was meant, with its exact total.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Alternative {
    pub q: String,
    pub total: u64,
}

/// A first page with at most this many hits offers `did_you_mean`.
pub const LOW_RESULTS: u64 = 2;

/// Alternatives for `q`, remembered for a while per normalized query, so
/// that a flood of misses costs one lookup each, not one per request.
pub type AlternativesCache = moka::future::Cache<String, Arc<Vec<Alternative>>>;

/// The alternatives of a query that found little: candidate words from the
/// suggester, each kept only if it finds something (its exact total is
/// counted on the live index). Optional work, so it runs only when the
/// heavy lane has a turn free at once, on the blocking pool, each count
/// with a short budget; otherwise, or on any failure, the answer goes
/// without. A search never waits or fails for want of a suggestion.
async fn alternatives(state: &AppState, q: &str) -> Arc<Vec<Alternative>> {
    let key = crate::text::normalize(q.trim());
    if let Some(known) = state.did_you_mean.get(&key).await {
        return known;
    }
    let Some(turn) = state.heavy_searches.try_enter() else {
        return Arc::default();
    };
    let suggester = state.suggester.clone();
    let generation = state.index.live();
    let q = q.to_owned();
    let counted = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let deadline = Instant::now() + std::time::Duration::from_millis(200);
        suggester
            .did_you_mean(&q, 3)
            .into_iter()
            .filter_map(|word| {
                let request = Request::newest_first(parse_query(&word), 1);
                let budget = search::Budget::until(deadline);
                let total = search::search_budgeted(&generation, &request, &budget)
                    .ok()?
                    .total;
                (total > 0).then_some(Alternative { q: word, total })
            })
            .collect::<Vec<_>>()
    })
    .await;
    let found = Arc::new(counted.unwrap_or_default());
    state.did_you_mean.insert(key, found.clone()).await;
    found
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HitBody {
    /// The source's name.
    #[serde(rename = "type")]
    pub kind: String,
    pub id: HitId,
    /// The first text field, as HTML (escaped, matches in `<em>`); null
    /// for a source with one text field.
    pub title: Option<String>,
    pub snippet: String,
    pub created_at: String,
    /// The source's attributes, by column name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<serde_json::Value>,
}

/// The row's key: a number for an integer key, a string otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum HitId {
    Number(i64),
    Text(String),
}

impl From<crate::model::Key> for HitId {
    fn from(key: crate::model::Key) -> HitId {
        match key {
            crate::model::Key::Int(i) => HitId::Number(i),
            crate::model::Key::Str(s) => HitId::Text(s),
        }
    }
}

impl HitBody {
    pub fn new(hit: Hit, sources: &Sources) -> HitBody {
        HitBody {
            kind: sources.get(hit.source).name.clone(),
            id: hit.key.into(),
            title: hit.title,
            snippet: hit.snippet,
            created_at: crate::model::rfc3339(hit.created_at),
            attributes: hit
                .attributes
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok()),
        }
    }
}

fn bad(code: &'static str, message: impl Into<String>) -> Error {
    Error::bad_request(code, message)
}

fn parse_time(name: &str, value: Option<&str>) -> Result<Option<i64>> {
    let Some(value) = value else { return Ok(None) };
    let time = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
        .map_err(|_| bad("invalid_time", format!("{name} must be an RFC 3339 time")))?;
    Ok(Some((time.unix_timestamp_nanos() / 1_000_000) as i64))
}

/// Checks the parameters and turns them into an index request.
pub fn to_request(
    params: &SearchParams,
    limits: &InputLimits,
    cursor_key: &[u8; 32],
    synonyms: &Synonyms,
    sources: &Sources,
) -> Result<Request> {
    let max_chars = limits.max_query_chars;
    let max_size = limits.max_size;
    let max_depth = limits.max_depth;
    let q = params.q.as_deref().unwrap_or("");
    if q.chars().count() > max_chars {
        return Err(bad(
            "query_too_long",
            format!("q must be at most {max_chars} characters"),
        ));
    }
    if q.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return Err(bad(
            "invalid_query",
            "q must not contain control characters",
        ));
    }
    // The query-string decoder replaces invalid UTF-8 with U+FFFD.
    if q.contains(char::REPLACEMENT_CHARACTER) {
        return Err(bad("invalid_query", "q must be valid UTF-8"));
    }
    let keywords = parse_query(q);
    if keywords.is_empty() {
        return Err(bad("empty_query", "q must contain a keyword"));
    }
    let source = match params.kind.as_deref() {
        None | Some("all") => None,
        Some(name) => Some(sources.by_name(name).ok_or_else(|| {
            bad(
                "invalid_type",
                format!(
                    "type must be all or one of: {}",
                    sources.names().collect::<Vec<_>>().join(", ")
                ),
            )
        })?),
    };
    let mut attributes = params.attributes.clone();
    if attributes.len() > MAX_ATTRIBUTE_FILTERS {
        return Err(bad(
            "invalid_attribute",
            format!("at most {MAX_ATTRIBUTE_FILTERS} attribute filters"),
        ));
    }
    for (name, value) in &attributes {
        if !sources.has_attribute(name) {
            return Err(bad(
                "invalid_attribute",
                format!("no source keeps an attribute {name:?}"),
            ));
        }
        if value.chars().count() > MAX_ATTRIBUTE_CHARS
            || value
                .chars()
                .any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER)
        {
            return Err(bad(
                "invalid_attribute",
                format!(
                    "attr.{name} must be at most {MAX_ATTRIBUTE_CHARS} characters of valid text"
                ),
            ));
        }
    }
    attributes.sort();
    attributes.dedup();
    let sort = match params.sort {
        None | Some(SortParam::Recent) => Sort::Recent,
        Some(SortParam::Oldest) => Sort::Oldest,
        Some(SortParam::Relevance) => Sort::Relevance,
    };
    let morph = params.match_mode == Some(MatchParam::Morph);
    let from = parse_time("from", params.from.as_deref())?;
    let to = parse_time("to", params.to.as_deref())?;
    if let (Some(from), Some(to)) = (from, to) {
        if from > to {
            return Err(bad("invalid_time", "from must not be after to"));
        }
    }
    let size = params.size.unwrap_or(10);
    if !(1..=max_size).contains(&size) {
        return Err(bad(
            "invalid_size",
            format!("size must be between 1 and {max_size}"),
        ));
    }
    let page = params.page.unwrap_or(1);
    if page == 0 {
        return Err(bad("invalid_page", "page starts at 1"));
    }
    if page.saturating_mul(size) > max_depth {
        return Err(bad(
            "too_deep",
            format!("page × size must be at most {max_depth}; use next_cursor to go deeper"),
        ));
    }
    let mut request = Request {
        keywords,
        filter: Filter {
            source,
            attributes,
            from,
            to,
        },
        sort,
        offset: (page - 1) * size,
        limit: size,
        after: None,
        morph,
        now: crate::db::now_ms(),
        synonyms: Vec::new(),
    };
    if params.synonyms != Some(false) && !synonyms.is_empty() {
        request.synonyms = request
            .keywords
            .iter()
            .map(|k| synonyms.others(k))
            .collect();
    }
    if let Some(cursor) = &params.cursor {
        if page != 1 {
            return Err(bad("invalid_cursor", "cursor and page cannot be combined"));
        }
        let (after, now) = decode_cursor(cursor, &request, cursor_key)?;
        request.after = Some(after);
        request.now = now;
    }
    Ok(request)
}

/// Searches that a cache rarely answers and that may read every match:
/// a time filter (each `from`/`to` pair is its own cache key and its own
/// totals), or a page past the first (never cached). They are legitimate,
/// but a client varying them gets no help from any cache, so they run in a
/// lane of their own, `CHAJA_HEAVY_SEARCHES` at a time, and cannot take
/// every core from the searches a search box sends. Cursor pages in any
/// order but newest first are heavy too (they cannot stop early); newest-
/// first cursor pages stop early like first pages.
fn is_heavy(request: &Request) -> bool {
    request.filter.from.is_some()
        || request.filter.to.is_some()
        || request.offset > 0
        || (request.after.is_some() && request.sort != Sort::Recent)
}

/// The lane heavy searches take turns in, with a bounded queue: past
/// `max_waiting` waiters a heavy search is refused at once (503) rather
/// than holding one of the server's in-flight slots while it waits.
pub struct HeavyLane {
    turns: Arc<tokio::sync::Semaphore>,
    waiting: std::sync::atomic::AtomicUsize,
    max_waiting: usize,
}

impl HeavyLane {
    pub fn new(turns: usize) -> HeavyLane {
        HeavyLane {
            turns: Arc::new(tokio::sync::Semaphore::new(turns.max(1))),
            waiting: Default::default(),
            max_waiting: 16 * turns.max(1),
        }
    }

    /// A turn, once one is free; refused when too many already wait.
    pub async fn enter(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        use std::sync::atomic::Ordering;
        if let Ok(turn) = self.turns.clone().try_acquire_owned() {
            return Ok(turn);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::Overloaded);
        }
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _waiting = Waiting(&self.waiting);
        self.turns
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::Overloaded)
    }

    /// A turn if one is free now, for optional work.
    pub fn try_enter(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.turns.clone().try_acquire_owned().ok()
    }

    /// Takes a turn and keeps it until dropped: for tests that need the
    /// lane busy.
    pub async fn hold(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.turns
            .clone()
            .acquire_owned()
            .await
            .expect("the lane is never closed")
    }
}

#[derive(Serialize, Deserialize)]
struct CursorBody {
    /// The rank of the last hit served.
    r: Rank,
    /// The query it belongs to.
    f: String,
    /// The query's reference time (`Request::now`); absent in cursors
    /// issued before it existed.
    #[serde(default)]
    t: Option<i64>,
}

/// The first byte of every cursor body: a later format gets another, and
/// an older server answers its cursors with a 400, not a wrong page.
const CURSOR_VERSION: u8 = 1;

/// `base64(version, json).base64(mac)`: opaque to clients, and a changed
/// byte is a 400 rather than a silently different page.
pub fn encode_cursor(rank: Rank, request: &Request, key: &[u8; 32]) -> String {
    let mut body = vec![CURSOR_VERSION];
    serde_json::to_writer(
        &mut body,
        &CursorBody {
            r: rank,
            f: SearchKey::query(request).as_str().to_owned(),
            t: Some(request.now),
        },
    )
    .expect("cursor serializes");
    let mac = blake3::keyed_hash(key, &body);
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&body),
        URL_SAFE_NO_PAD.encode(&mac.as_bytes()[..16])
    )
}

fn decode_cursor(token: &str, request: &Request, key: &[u8; 32]) -> Result<(Rank, i64)> {
    let invalid = || bad("invalid_cursor", "cursor is malformed or was changed");
    let (body, mac) = token.split_once('.').ok_or_else(invalid)?;
    let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| invalid())?;
    let mac = URL_SAFE_NO_PAD.decode(mac).map_err(|_| invalid())?;
    let expected = blake3::keyed_hash(key, &body);
    if !constant_time_eq::constant_time_eq(&expected.as_bytes()[..16], &mac) {
        return Err(invalid());
    }
    let Some((&CURSOR_VERSION, body)) = body.split_first() else {
        return Err(invalid());
    };
    let cursor: CursorBody = serde_json::from_slice(body).map_err(|_| invalid())?;
    if cursor.f != SearchKey::query(request).as_str() {
        return Err(bad(
            "invalid_cursor",
            "cursor belongs to another query, sort or filter",
        ));
    }
    // A reference time from the future or before the epoch is no time a
    // query of ours ran at, even under a valid MAC.
    let now = cursor.t.unwrap_or(request.now);
    if !(0..=request.now.saturating_add(86_400_000)).contains(&now) {
        return Err(invalid());
    }
    Ok((cursor.r, now))
}

#[utoipa::path(get, path = "/api/search", tag = "search", params(SearchParams), responses((status = 200, description = "exactly the rows LIKE would return, with an exact total; never touches the database", body = SearchResponse), (status = 400, description = "bad query, size, page, depth, cursor, sort, type or time", body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, description = "timeout or overload", body = ErrorBody)))]
async fn search_handler(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<([(HeaderName, HeaderValue); 2], Vec<u8>)> {
    let started = Instant::now();
    let params = split_attributes(raw.as_deref())?;
    let sources = state.index.sources().clone();
    let request = to_request(
        &params,
        &state.input,
        &state.cursor_key,
        &state.synonyms,
        &sources,
    )?;
    // Time spent in the index, when the cache did not answer.
    let index_time = Arc::new(std::sync::Mutex::new(None::<std::time::Duration>));
    let run = |watermark: i64| {
        let generation = state.index.live();
        let request = request.clone();
        let key = state.cursor_key.clone();
        let span = tracing::Span::current();
        let index_time = index_time.clone();
        let sources = sources.clone();
        // The answer is as fresh as the watermark read just before this.
        let computed_at_ms = crate::db::now_ms();
        // The search stops when this future is dropped (the request timed
        // out or its client hung up) or at the request's deadline, instead
        // of finishing work nobody reads.
        let budget = search::Budget::until(started + state.request_timeout);
        let heavy = is_heavy(&request).then(|| state.heavy_searches.clone());
        async move {
            // Heavy searches take turns for a few cores (see `is_heavy`);
            // the wait counts against the request's deadline.
            let turn = match heavy {
                Some(lane) => Some(lane.enter().await?),
                None => None,
            };
            let stop = budget.stop_on_drop();
            let (response, request) = tokio::task::spawn_blocking(move || {
                // The turn is the work's, not the request's: a scan that
                // outlives its request still holds it until it stops.
                let _turn = turn;
                let _enter = span.enter();
                let started = Instant::now();
                let result =
                    search::search_budgeted(&generation, &request, &budget).map(|r| (r, request));
                *index_time.lock().expect("timing lock") = Some(started.elapsed());
                result
            })
            .await??;
            stop.disarm();
            let next_cursor = match response.hits.last() {
                Some(last) if response.hits.len() == request.limit => {
                    Some(encode_cursor(last.rank, &request, &key))
                }
                _ => None,
            };
            // Encoded once, here: the cache keeps bytes, and a hot answer
            // is served many times a second without serializing again.
            let hits: Vec<HitBody> = response
                .hits
                .into_iter()
                .map(|hit| HitBody::new(hit, &sources))
                .collect();
            let hits = serde_json::value::to_raw_value(&hits).expect("hits serialize to json");
            Ok(Answer::new(
                response.by_source[..sources.len()].to_vec(),
                hits,
                next_cursor,
                watermark,
                computed_at_ms,
            ))
        }
    };
    // Only first pages are cached: deep pages and cursor pages are rare per
    // key and would crowd out the hot set.
    let first_page = request.offset == 0 && request.after.is_none();
    let (answer, cache) = if first_page {
        state
            .cache
            .get_or_compute(&SearchKey::first_page(&request), run)
            .await?
    } else {
        let watermark = state.mirror.progress.version();
        (Arc::new(run(watermark).await?), CacheStatus::MISS)
    };
    // Trending counts searches that found something: a query nobody's
    // data answers is not a trend, and junk cannot fill the counters.
    // Searches that found nothing are counted apart, for the operators:
    // the most actionable signal a content site has.
    if let (true, Some(client)) = (first_page, client) {
        let keywords: Vec<&str> = request.keywords.iter().map(|k| k.as_str()).collect();
        if answer.total() > 0 {
            state.trending.record(&keywords.join(" "), client);
        } else if request.filter == Filter::default() {
            // Only unfiltered: `파이썬` by an author with no posts, or in a
            // random date range, says nothing about what the site lacks.
            state.zero_results.record(&keywords.join(" "), client);
        }
    }
    let did_you_mean = if first_page && answer.total() <= LOW_RESULTS {
        Some(alternatives(&state, params.q.as_deref().unwrap_or_default()).await)
    } else {
        None
    };
    let took = started.elapsed();
    let index = index_time.lock().expect("timing lock").unwrap_or_default();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    // The search path never touches the database: its share is always 0.
    let timing = format!(
        "cache;dur={:.3}, index;dur={:.3}, db;dur=0",
        ms(took.saturating_sub(index)),
        ms(index)
    );
    // The shape of `SearchResponse`, with the hits' JSON made once per answer.
    #[derive(Serialize)]
    struct Body<'a> {
        total: u64,
        totals: TypeTotals,
        hits: &'a serde_json::value::RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        expanded: Option<Vec<&'a str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        did_you_mean: Option<&'a [Alternative]>,
        next_cursor: &'a Option<String>,
        took_ms: f64,
        cache: CacheStatus,
    }
    let expanded = request.synonyms.iter().any(|s| !s.is_empty()).then(|| {
        let mut forms: Vec<&str> = request.keywords.iter().map(|k| k.as_str()).collect();
        forms.extend(request.synonyms.iter().flatten().map(|k| k.as_str()));
        forms
    });
    let body = serde_json::to_vec(&Body {
        total: answer.total(),
        totals: type_totals(&sources, &answer.by_source),
        hits: &answer.hits,
        expanded,
        did_you_mean: did_you_mean
            .as_deref()
            .map(Vec::as_slice)
            .filter(|a| !a.is_empty()),
        next_cursor: &answer.next_cursor,
        took_ms: ms(took),
        cache,
    })
    .expect("search response serializes to json");
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (
            SERVER_TIMING.clone(),
            HeaderValue::from_str(&timing).expect("ascii timing"),
        ),
    ];
    Ok((headers, body))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TrendingParams {
    #[param(inline)]
    pub window: Option<Window>,
    /// 1 to 100; default 10.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TrendingResponse {
    #[schema(inline)]
    pub window: Window,
    pub keywords: Vec<Trend>,
}

/// 실시간 인기 검색어: the most searched normalized keywords in the window,
/// each client counted once per keyword per window. First pages only:
/// scrolling through one search is not searching again.
#[utoipa::path(get, path = "/api/search/trending", tag = "search", params(TrendingParams), responses((status = 200, body = TrendingResponse), (status = 400, description = "bad window or limit", body = ErrorBody), (status = 503, description = "redis configured but not answering", body = ErrorBody)))]
async fn trending_handler(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<TrendingParams>,
) -> Result<Json<TrendingResponse>> {
    top_keywords(&state.trending, params).await
}

/// The top of a keyword counter, for the window and limit asked.
async fn top_keywords(
    counter: &crate::cache::trending::Trending,
    params: TrendingParams,
) -> Result<Json<TrendingResponse>> {
    let window = params.window.unwrap_or(Window::Hour);
    let limit = params.limit.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(bad("invalid_limit", "limit must be between 1 and 100"));
    }
    let keywords = counter.top(window, limit).await?;
    Ok(Json(TrendingResponse { window, keywords }))
}

/// Searches that found nothing, most frequent first, each client counted
/// once per keyword per window, with trending's bounds (keywords per bucket
/// and per client). First pages only.
#[utoipa::path(get, path = "/api/search/zero-results", tag = "search", params(TrendingParams), responses((status = 200, body = TrendingResponse), (status = 400, description = "bad window or limit", body = ErrorBody), (status = 503, description = "redis configured but not answering", body = ErrorBody)))]
async fn zero_results_handler(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<TrendingParams>,
) -> Result<Json<TrendingResponse>> {
    top_keywords(&state.zero_results, params).await
}

static SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

#[cfg(test)]
mod tests {
    use super::*;

    fn request(q: &str) -> Request {
        let params = SearchParams {
            q: Some(q.to_owned()),
            ..SearchParams::default()
        };
        to_request(
            &params,
            &InputLimits::default(),
            &[7; 32],
            &Synonyms::default(),
            &crate::sources::for_tests(),
        )
        .unwrap()
    }

    #[test]
    fn cursors_round_trip_and_reject_changes() {
        let key = [7; 32];
        let r = request("스프링");
        let token = encode_cursor((0, 123, 456), &r, &key);
        assert_eq!(
            decode_cursor(&token, &r, &key).unwrap(),
            ((0, 123, 456), r.now)
        );
        // Another query, another key, a flipped character, garbage.
        assert!(decode_cursor(&token, &request("부트"), &key).is_err());
        assert!(decode_cursor(&token, &r, &[8; 32]).is_err());
        let mut flipped = token.clone().into_bytes();
        flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
        assert!(decode_cursor(&String::from_utf8(flipped).unwrap(), &r, &key).is_err());
        assert!(decode_cursor("not-a-cursor", &r, &key).is_err());
    }

    /// Whoever holds the key can sign anything; a reference time no query
    /// could have had is still a 400, not an overflow in the recency factor.
    #[test]
    fn cursors_with_impossible_times_are_refused() {
        let key = [7; 32];
        let mut r = request("스프링");
        for forged in [i64::MIN, -1, r.now + 2 * 86_400_000, i64::MAX] {
            let mut at = r.clone();
            at.now = forged;
            let token = encode_cursor((0, 123, 456), &at, &key);
            assert!(decode_cursor(&token, &r, &key).is_err(), "{forged}");
        }
        // A cursor of another format version.
        r.now = 1;
        let token = encode_cursor((0, 1, 2), &r, &key);
        let (body, _) = token.split_once('.').unwrap();
        let mut raw = URL_SAFE_NO_PAD.decode(body).unwrap();
        raw[0] = 2;
        let body = URL_SAFE_NO_PAD.encode(&raw);
        let mac = URL_SAFE_NO_PAD.encode(&blake3::keyed_hash(&key, &raw).as_bytes()[..16]);
        assert!(decode_cursor(&format!("{body}.{mac}"), &r, &key).is_err());
    }
}
