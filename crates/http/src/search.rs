//! `GET /api/search`: the hot path. It reads only the cache and the index:
//! no database connection is taken to answer a search.

use std::time::Instant;

use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use chaja_core::clock::now_ms;
use chaja_core::sources::Sources;
use chaja_core::synonyms::Synonyms;
use chaja_core::text::{normalized_chars, parse_query};
use chaja_index::search::{
    AttrOrder, FacetCounts, Filter, Hit, NumberRange, Request, Sort, DEFAULT_FACET_SIZE,
};
use chaja_search::cache::CacheStatus;
use chaja_search::cursor::{self, CursorError};
use chaja_search::snapshots::SnapshotId;
use chaja_search::trending::{Trend, Window};
use chaja_search::{Alternative, Asked};

use crate::error::{ApiError, ErrorBody, Result};
use crate::{ApiQuery, AppState, ClientIp, InputLimits};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_handler))
        .routes(routes!(trending_handler))
        .routes(routes!(zero_results_handler))
        .routes(routes!(options_handler))
}

/// What a search page can offer for these sources: the types (tabs), the
/// facets (chips with counts) and the attributes it can sort by.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchOptions {
    /// Source names, for `type=`.
    pub types: Vec<String>,
    /// Attributes some source declares in `facets`, for `facets=`.
    pub facets: Vec<String>,
    /// Attributes some source declares `sortable`, for
    /// `sort=attr.<name>.desc|asc`.
    pub sortable: Vec<String>,
}

/// The search's vocabulary, from the config: what `type`, `facets` and
/// `sort=attr.…` accept.
#[utoipa::path(get, path = "/api/search/options", tag = "search", responses((status = 200, body = SearchOptions)))]
async fn options_handler(State(state): State<AppState>) -> Json<SearchOptions> {
    let sources = state.search.index.sources();
    let owned = |names: Vec<&str>| names.into_iter().map(str::to_owned).collect();
    Json(SearchOptions {
        types: owned(sources.names().collect()),
        facets: owned(sources.facet_names()),
        sortable: owned(sources.sortable_names()),
    })
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
    /// `recent` (default): newest first. `oldest`. `relevance`: BM25 over
    /// morphemes with a recency factor. `attr.<name>.desc` or
    /// `attr.<name>.asc`: by a sortable attribute, ties newest first, rows
    /// without a value last.
    #[param(
        value_type = Option<String>,
        max_length = 80,
        pattern = r"^(recent|oldest|relevance|attr\.[A-Za-z_][A-Za-z0-9_]*\.(asc|desc))$"
    )]
    pub sort: Option<SortParam>,
    /// Facets to count over every match, comma-separated names of
    /// attributes a source declares in `facets` (at most 8).
    #[param(
        min_length = 1,
        max_length = 600,
        pattern = r"^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$"
    )]
    pub facets: Option<String>,
    /// Values shown per facet, the most frequent first: 1 to 100; default
    /// 20.
    #[param(minimum = 1, maximum = 100)]
    pub facet_size: Option<usize>,
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
    /// `page`. A walk that follows `next_cursor` reads the index as its
    /// first page did (a point in time): it never skips or repeats a row
    /// that existed throughout it, whatever changed meanwhile, for every
    /// `sort`, while no more than the keep-alive (120 s by default, at
    /// least 60 s) passes between two pages; past it, a 410
    /// `cursor_expired`.
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
    /// `attr.<name>.gte=<number>` and `attr.<name>.lte=<number>`, in the
    /// order given: (name, bound, value).
    #[serde(skip)]
    #[param(ignore)]
    pub bounds: Vec<(String, Bound, String)>,
}

/// Which side of a range an `attr.<name>.gte|lte` parameter bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    AtLeast,
    AtMost,
}

/// Attribute filters a request may carry, and how long a value may be.
const MAX_ATTRIBUTE_FILTERS: usize = 8;
const MAX_ATTRIBUTE_CHARS: usize = 200;

/// Reads a search query string: `attr.<name>` pairs apart, the rest into
/// [`SearchParams`] the way axum's `Query` reads it (the same errors).
pub fn split_attributes(raw: Option<&str>) -> Result<SearchParams> {
    let (mut params, attributes, bounds) = split_attribute_params::<SearchParams>(raw)?;
    params.attributes = attributes;
    params.bounds = bounds;
    Ok(params)
}

/// `attr.<name>=<value>` filters, in the order given.
pub(crate) type AttributeFilters = Vec<(String, String)>;

/// `attr.<name>.gte` and `.lte` bounds, in the order given.
pub(crate) type AttributeBounds = Vec<(String, Bound, String)>;

/// The query string's `attr.*` parameters, and the rest read into `P`.
pub(crate) fn split_attribute_params<P: serde::de::DeserializeOwned>(
    raw: Option<&str>,
) -> Result<(P, AttributeFilters, AttributeBounds)> {
    let mut attributes = Vec::new();
    let mut bounds = Vec::new();
    let mut rest = form_urlencoded::Serializer::new(String::new());
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match name.strip_prefix("attr.") {
            Some(attribute) => {
                if let Some(n) = attribute.strip_suffix(".gte") {
                    bounds.push((n.to_owned(), Bound::AtLeast, value.into_owned()));
                } else if let Some(n) = attribute.strip_suffix(".lte") {
                    bounds.push((n.to_owned(), Bound::AtMost, value.into_owned()));
                } else {
                    attributes.push((attribute.to_owned(), value.into_owned()));
                }
            }
            None => {
                rest.append_pair(&name, &value);
            }
        }
    }
    let uri: axum::http::Uri = format!("/?{}", rest.finish())
        .parse()
        .map_err(|_| bad("invalid_query", "the query string is malformed"))?;
    let axum::extract::Query(params) =
        axum::extract::Query::<P>::try_from_uri(&uri).map_err(ApiError::from)?;
    Ok((params, attributes, bounds))
}

/// `sort`, read once: one of the three orders, or an attribute and a
/// direction (checked against the sources in `to_request`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum SortParam {
    Recent,
    Oldest,
    Relevance,
    Attribute { name: String, descending: bool },
}

impl TryFrom<String> for SortParam {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<SortParam, String> {
        let wrong = || {
            format!("sort must be recent, oldest, relevance, attr.<name>.desc or attr.<name>.asc, not {text:?}")
        };
        Ok(match text.as_str() {
            "recent" => SortParam::Recent,
            "oldest" => SortParam::Oldest,
            "relevance" => SortParam::Relevance,
            other => {
                let attribute = other.strip_prefix("attr.").ok_or_else(wrong)?;
                let (name, direction) = attribute.rsplit_once('.').ok_or_else(wrong)?;
                let descending = match direction {
                    "desc" => true,
                    "asc" => false,
                    _ => return Err(wrong()),
                };
                if name.is_empty() || name.len() > 64 {
                    return Err(wrong());
                }
                SortParam::Attribute {
                    name: name.to_owned(),
                    descending,
                }
            }
        })
    }
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
    /// Present when `facets` asked for some: each facet's counts over
    /// every match, after every filter, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<std::collections::BTreeMap<String, FacetBody<'static>>>,
    /// Continues after the last hit, on the same point in time (see
    /// `cursor`); null when this page was the last.
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

impl From<chaja_core::model::Key> for HitId {
    fn from(key: chaja_core::model::Key) -> HitId {
        match key {
            chaja_core::model::Key::Int(i) => HitId::Number(i),
            chaja_core::model::Key::Str(s) => HitId::Text(s),
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
            created_at: chaja_core::model::rfc3339(hit.created_at),
            attributes: hit
                .attributes
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok()),
        }
    }
}

fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, message)
}

fn parse_time(name: &str, value: Option<&str>) -> Result<Option<i64>> {
    let Some(value) = value else { return Ok(None) };
    let time = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
        .map_err(|_| bad("invalid_time", format!("{name} must be an RFC 3339 time")))?;
    Ok(Some((time.unix_timestamp_nanos() / 1_000_000) as i64))
}

/// Checks the parameters and turns them into an index request, and the
/// point in time a cursor names.
pub fn to_request(
    params: &SearchParams,
    limits: &InputLimits,
    cursor_key: &[u8; 32],
    synonyms: &Synonyms,
    sources: &Sources,
) -> Result<(Request, Option<SnapshotId>)> {
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
    // Counted again as the index sees it: NFKC makes some characters many
    // (`ﷺ` is 18), and the work grows with what is searched.
    if normalized_chars(&keywords) > max_chars {
        return Err(bad(
            "query_too_long",
            format!("q must be at most {max_chars} characters once normalized (NFKC)"),
        ));
    }
    let filter = filter_of(
        params.kind.as_deref(),
        &params.attributes,
        &params.bounds,
        (params.from.as_deref(), params.to.as_deref()),
        sources,
    )?;
    let sort = match &params.sort {
        None | Some(SortParam::Recent) => Sort::Recent,
        Some(SortParam::Oldest) => Sort::Oldest,
        Some(SortParam::Relevance) => Sort::Relevance,
        Some(SortParam::Attribute { name, descending }) => {
            if !sources.is_sortable(name) {
                return Err(bad(
                    "invalid_sort",
                    format!(
                        "no source declares {name:?} sortable; sortable: [{}]",
                        sources.sortable_names().join(", ")
                    ),
                ));
            }
            Sort::Attribute(AttrOrder {
                name: name.clone(),
                descending: *descending,
            })
        }
    };
    let facets = facet_names(params.facets.as_deref(), sources)?;
    let facet_size = params.facet_size.unwrap_or(DEFAULT_FACET_SIZE);
    if !(1..=MAX_FACET_SIZE).contains(&facet_size) {
        return Err(bad(
            "invalid_facet_size",
            format!("facet_size must be between 1 and {MAX_FACET_SIZE}"),
        ));
    }
    let morph = params.match_mode == Some(MatchParam::Morph);
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
        filter,
        sort,
        offset: (page - 1) * size,
        limit: size,
        after: None,
        morph,
        now: now_ms(),
        synonyms: Vec::new(),
        facets,
        facet_size,
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
        let cursor = cursor::decode(cursor, &request, cursor_key).map_err(|e| match e {
            CursorError::Invalid | CursorError::OtherQuery => bad("invalid_cursor", e.to_string()),
        })?;
        request.after = Some(cursor.after);
        request.now = cursor.now;
        return Ok((request, Some(cursor.snapshot)));
    }
    Ok((request, None))
}

/// The filters of a search or a like search, checked: `type`, `attr.*`
/// values and ranges, and `from`/`to`.
pub(crate) fn filter_of(
    kind: Option<&str>,
    attributes: &[(String, String)],
    bounds: &[(String, Bound, String)],
    (from, to): (Option<&str>, Option<&str>),
    sources: &Sources,
) -> Result<Filter> {
    let source = match kind {
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
    let mut attributes = attributes.to_vec();
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
    let ranges = number_ranges(bounds, sources)?;
    let from = parse_time("from", from)?;
    let to = parse_time("to", to)?;
    if let (Some(from), Some(to)) = (from, to) {
        if from > to {
            return Err(bad("invalid_time", "from must not be after to"));
        }
    }
    Ok(Filter {
        source,
        attributes,
        from,
        to,
        ranges,
    })
}

/// Facets a request may ask for, and values per facet at most.
const MAX_FACETS: usize = 8;
const MAX_FACET_SIZE: usize = 100;

/// `attr.<name>.gte` and `.lte` as ranges on numeric attributes, one per
/// name, sorted by name (equal ranges make equal keys).
fn number_ranges(
    bounds: &[(String, Bound, String)],
    sources: &Sources,
) -> Result<Vec<NumberRange>> {
    if bounds.len() > MAX_ATTRIBUTE_FILTERS {
        return Err(bad(
            "invalid_range",
            format!("at most {MAX_ATTRIBUTE_FILTERS} range bounds"),
        ));
    }
    let mut ranges: Vec<NumberRange> = Vec::new();
    for (name, bound, text) in bounds {
        let side = match bound {
            Bound::AtLeast => "gte",
            Bound::AtMost => "lte",
        };
        if !sources.is_numeric(name) {
            return Err(bad(
                "invalid_range",
                format!("no source declares {name:?} numeric, so attr.{name}.{side} has nothing to compare"),
            ));
        }
        let value = text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && text.len() <= 40)
            .ok_or_else(|| {
                bad(
                    "invalid_range",
                    format!("attr.{name}.{side} must be a number"),
                )
            })?;
        let range = match ranges.iter_mut().find(|r| &r.name == name) {
            Some(range) => range,
            None => {
                ranges.push(NumberRange {
                    name: name.clone(),
                    gte: None,
                    lte: None,
                });
                ranges.last_mut().expect("just pushed")
            }
        };
        let slot = match bound {
            Bound::AtLeast => &mut range.gte,
            Bound::AtMost => &mut range.lte,
        };
        if slot.is_some() {
            return Err(bad(
                "invalid_range",
                format!("attr.{name}.{side} is given twice"),
            ));
        }
        *slot = Some(value);
        if let (Some(lo), Some(hi)) = (range.gte, range.lte) {
            if lo > hi {
                return Err(bad(
                    "invalid_range",
                    format!("attr.{name}.gte must not be above attr.{name}.lte"),
                ));
            }
        }
    }
    ranges.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(ranges)
}

/// `facets=a,b`: names some source declares as facets, once each, in the
/// order asked.
fn facet_names(list: Option<&str>, sources: &Sources) -> Result<Vec<String>> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = Vec::new();
    for name in list.split(',') {
        if !sources.is_facet(name) {
            return Err(bad(
                "invalid_facet",
                format!(
                    "no source declares {name:?} a facet; facets: [{}]",
                    sources.facet_names().join(", ")
                ),
            ));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    if names.len() > MAX_FACETS {
        return Err(bad("invalid_facet", format!("at most {MAX_FACETS} facets")));
    }
    Ok(names)
}

/// A facet's counts in the answer: `{"values": {"<value>": count, …},
/// "distinct": n}`, values the most frequent first.
#[derive(Debug, Serialize, ToSchema)]
pub struct FacetBody<'a> {
    /// Value → matching rows, for the top `facet_size` values by count
    /// (ties by value); values as the database shows them.
    #[schema(value_type = Object)]
    pub values: InOrder<&'a str, u64>,
    /// How many distinct values the matched rows hold.
    pub distinct: u64,
}

/// Pairs written as a JSON object in their order (a map would sort them).
#[derive(Debug)]
pub struct InOrder<K, V>(pub Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for InOrder<K, V> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// The answer's `facets`: by name in the order asked.
fn facets_body(facets: &[FacetCounts]) -> InOrder<&str, FacetBody<'_>> {
    InOrder(
        facets
            .iter()
            .map(|f| {
                let values = f.values.iter().map(|(v, n)| (v.as_str(), *n)).collect();
                (
                    f.name.as_str(),
                    FacetBody {
                        values: InOrder(values),
                        distinct: f.distinct,
                    },
                )
            })
            .collect(),
    )
}

#[utoipa::path(get, path = "/api/search", tag = "search", params(SearchParams), responses((status = 200, description = "exactly the rows LIKE would return, with an exact total; never touches the database", body = SearchResponse), (status = 400, description = "bad query, size, page, depth, cursor, sort, type, time, range or facet", body = ErrorBody), (status = 410, description = "the cursor's point in time expired (a pause past the keep-alive, or a cursor of another server): start the walk again", body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, description = "timeout, overload, or a row the index could not read back", body = ErrorBody)))]
async fn search_handler(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<([(HeaderName, HeaderValue); 2], Vec<u8>)> {
    let started = Instant::now();
    let params = split_attributes(raw.as_deref())?;
    let sources = state.search.index.sources().clone();
    let (request, snapshot) = to_request(
        &params,
        &state.input,
        &state.search.cursor_key,
        &state.synonyms,
        &sources,
    )?;
    let asked = Asked {
        snapshot,
        q: params.q.as_deref().unwrap_or_default(),
        client,
        started,
    };
    // Encoded once, when computed: the cache keeps bytes, and a hot answer
    // is served many times a second without serializing again.
    let encode = {
        let sources = sources.clone();
        Box::new(move |hit: Hit| {
            serde_json::value::to_raw_value(&HitBody::new(hit, &sources))
                .expect("a hit serializes to json")
        })
    };
    let served = state.search.search(&request, asked, encode).await?;
    let answer = &served.answer;
    let took = started.elapsed();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    // The search path never touches the database: its share is always 0.
    let timing = format!(
        "cache;dur={:.3}, index;dur={:.3}, db;dur=0",
        ms(took.saturating_sub(served.index_time)),
        ms(served.index_time)
    );
    // The shape of `SearchResponse`, with the hits' JSON made once per answer.
    #[derive(Serialize)]
    struct Body<'a> {
        total: u64,
        totals: TypeTotals,
        hits: &'a [Box<serde_json::value::RawValue>],
        #[serde(skip_serializing_if = "Option::is_none")]
        expanded: Option<Vec<&'a str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        did_you_mean: Option<&'a [Alternative]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        facets: Option<InOrder<&'a str, FacetBody<'a>>>,
        next_cursor: &'a Option<String>,
        took_ms: f64,
        cache: CacheStatus,
    }
    let expanded = request.synonyms.iter().any(|s| !s.is_empty()).then(|| {
        let mut forms: Vec<&str> = request.keywords.iter().map(|k| k.as_str()).collect();
        forms.extend(request.synonyms.iter().flatten().map(|k| k.as_str()));
        forms
    });
    // Sized for the hits, which are most of the body, so that writing it
    // does not grow (and copy) the buffer several times.
    let hit_bytes: usize = served.hits().iter().map(|h| h.get().len() + 1).sum();
    let mut body = Vec::with_capacity(hit_bytes + 512);
    serde_json::to_writer(
        &mut body,
        &Body {
            total: answer.total(),
            totals: type_totals(&sources, &answer.by_source),
            hits: served.hits(),
            expanded,
            did_you_mean: served
                .did_you_mean
                .as_deref()
                .map(Vec::as_slice)
                .filter(|a| !a.is_empty()),
            facets: (!request.facets.is_empty()).then(|| facets_body(&answer.facets)),
            next_cursor: &served.next_cursor,
            took_ms: ms(took),
            cache: served.cache,
        },
    )
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
    top_keywords(&state.search.trending, params).await
}

/// The top of a keyword counter, for the window and limit asked.
async fn top_keywords(
    counter: &chaja_search::trending::Trending,
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
    top_keywords(&state.search.zero_results, params).await
}

static SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

#[cfg(test)]
mod tests {
    use super::*;

    fn request(q: &str) -> Result<Request> {
        let params = SearchParams {
            q: Some(q.to_owned()),
            ..SearchParams::default()
        };
        to_request(
            &params,
            &InputLimits::default(),
            &[7; 32],
            &Synonyms::default(),
            &chaja_core::sources::for_tests(),
        )
        .map(|(request, _)| request)
    }

    #[test]
    fn a_query_is_checked_once_into_a_request() {
        assert_eq!(request("스프링").unwrap().keywords.len(), 1);
        assert!(request("").is_err());
        assert!(request("a\u{1}b").is_err());
    }

    /// The length limit counts the normalized keywords: 98 typed `ﷺ` are
    /// 1,764 characters to search, past the limit of 100.
    #[test]
    fn the_length_limit_applies_after_normalization() {
        let phrase = format!("\"{}\"", "ﷺ".repeat(98));
        assert_eq!(phrase.chars().count(), 100);
        let Err(ApiError::BadRequest { code, .. }) = request(&phrase) else {
            panic!("a 1,764-character phrase is refused");
        };
        assert_eq!(code, "query_too_long");
        assert!(request(&"ﷺ".repeat(5)).is_ok());
    }
}
