//! What a search asks and what it answers: the request, its orders and
//! filters, the cache key it is known by, hits and responses.

use chaja_core::model::Key;
use chaja_core::sources::SourceId;
use chaja_core::text::Keyword;

use crate::attributes::{AttrOrder, FacetCounts, NumberRange};
use crate::caches::SourceCounts;
use crate::{morph, tag_source};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Sort {
    /// `created_at DESC, id DESC`.
    #[default]
    Recent,
    /// `created_at ASC, id ASC`.
    Oldest,
    /// BM25 over the morphological fields (title boosted) for the query's
    /// content morphemes, times a recency factor, then newest first. With
    /// `match=morph`, rows that contain the exact substring come before rows
    /// that only share morphemes. A query with no content morpheme (`니다`)
    /// falls back to BM25 over the 4-gram field (keywords of 4 or more
    /// characters; shorter ones score alike, so newest first decides).
    Relevance,
    /// By a sortable attribute's number, then newest first; rows without
    /// one last (see `AttrOrder`).
    Attribute(AttrOrder),
}

/// A hit's place in the requested order: larger comes first. Cursors carry
/// it, and the next page takes only ranks below it, so no two documents
/// may share one: the last two parts are the row's `uid` and `tag`, unique
/// per row (see `uid`).
pub type Rank = (i64, i64, u64, u64);

/// `first` is the attribute's part under `Sort::Attribute` (see
/// `AttrOrder::rank_part`), unused by the other orders.
pub(super) fn rank(
    sort: &Sort,
    created_at: i64,
    uid: u64,
    tag: u64,
    score: f32,
    first: i64,
) -> Rank {
    match sort {
        Sort::Recent => (0, created_at, uid, tag),
        Sort::Oldest => (0, -created_at, u64::MAX - uid, u64::MAX - tag),
        // BM25 scores are never negative, so their bits order like them.
        Sort::Relevance => (i64::from(score.max(0.0).to_bits()), created_at, uid, tag),
        Sort::Attribute(_) => (first, created_at, uid, tag),
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub source: Option<SourceId>,
    /// `attr.<name>=<value>`: rows whose attribute has this value, all of
    /// them; sorted by name, so that equal filters make equal keys.
    pub attributes: Vec<(String, String)>,
    /// Inclusive bounds on `created_at`, in milliseconds.
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// `attr.<name>.gte/lte` on numeric attributes, sorted by name.
    pub ranges: Vec<NumberRange>,
}

impl Filter {
    /// Whether the rows this filter passes depend on their attributes.
    pub fn reads_attributes(&self) -> bool {
        let Filter {
            source: _,
            attributes,
            from: _,
            to: _,
            ranges,
        } = self;
        !attributes.is_empty() || !ranges.is_empty()
    }

    /// Whether a row created at `created_at` with `tag` passes the source
    /// and time bounds; what reads attributes is checked by its columns
    /// (see `attributes`) or by the query (an attribute's value).
    pub(super) fn accepts(&self, created_at: i64, tag: u64) -> bool {
        let Filter {
            source,
            attributes: _,
            from,
            to,
            ranges: _,
        } = self;
        source.is_none_or(|source| tag_source(tag) == source.index())
            && from.is_none_or(|from| created_at >= from)
            && to.is_none_or(|to| created_at <= to)
    }
}

#[derive(Debug, Clone)]
pub struct Request {
    pub keywords: Vec<Keyword>,
    pub filter: Filter,
    pub sort: Sort,
    /// Hits to skip, for page-based paging.
    pub offset: usize,
    pub limit: usize,
    /// Only hits ranked strictly below this, for cursor paging.
    pub after: Option<Rank>,
    /// `match=morph`: also rows that contain every content morpheme of the
    /// query, not only the exact substring.
    pub morph: bool,
    /// The time the recency factor of `sort=relevance` is taken at, in
    /// epoch milliseconds: fixed for a query and carried by its cursors, so
    /// that every page of one walk ranks rows alike.
    pub now: i64,
    /// For each keyword, its synonyms (see `chaja_core::synonyms`): a row
    /// matches the keyword when it contains any of them. Empty, or one list
    /// per keyword.
    pub synonyms: Vec<Vec<Keyword>>,
    /// `facets=`: attributes to count the matched set by, in this order.
    pub facets: Vec<String>,
    /// How many values each facet shows, the most frequent first.
    pub facet_size: usize,
}

/// Values a facet shows unless `facet_size` says otherwise.
pub const DEFAULT_FACET_SIZE: usize = 20;

impl Request {
    /// The first `limit` rows, newest first, with no filter: what a search
    /// box asks for.
    pub fn newest_first(keywords: Vec<Keyword>, limit: usize) -> Request {
        Request {
            keywords,
            filter: Filter::default(),
            sort: Sort::Recent,
            offset: 0,
            limit,
            after: None,
            morph: false,
            now: 0,
            synonyms: Vec::new(),
            facets: Vec::new(),
            facet_size: DEFAULT_FACET_SIZE,
        }
    }

    /// Keyword `i` and its synonyms.
    pub(super) fn forms(&self, i: usize) -> impl Iterator<Item = &Keyword> {
        std::iter::once(&self.keywords[i]).chain(self.synonyms.get(i).into_iter().flatten())
    }

    /// Every keyword and synonym, for highlighting.
    pub fn all_forms(&self) -> Vec<Keyword> {
        (0..self.keywords.len())
            .flat_map(|i| self.forms(i).cloned())
            .collect()
    }
}

impl Sort {
    /// The order as the API writes it, for keys.
    pub fn name(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Sort::Recent => "recent".into(),
            Sort::Oldest => "oldest".into(),
            Sort::Relevance => "relevance".into(),
            Sort::Attribute(order) => format!(
                "attr.{}.{}",
                order.name,
                if order.descending { "desc" } else { "asc" }
            )
            .into(),
        }
    }
}

/// Whether the AND of the request's keywords, as typed, is exactly its
/// matches before its time and source bounds: some keyword, none with a
/// synonym, no morpheme matching and no attribute filter.
pub(super) fn plain_and(request: &Request) -> bool {
    plain_keywords(request) && !request.morph
}

/// Whether the request's keywords are as typed and nothing but them,
/// their morphemes and its time and source bounds decide its matches:
/// some keyword, none with a synonym, and no attribute filter.
pub(super) fn plain_keywords(request: &Request) -> bool {
    // The source, the time bounds and the ranges are read by the scan, per
    // range or per match; an attribute filter is a clause of the query.
    let Filter {
        attributes,
        source: _,
        from: _,
        to: _,
        ranges: _,
    } = &request.filter;
    !request.keywords.is_empty()
        && attributes.is_empty()
        && (0..request.keywords.len()).all(|i| request.forms(i).nth(1).is_none())
}

/// What names a search's answer, built from the typed request: keywords,
/// synonyms, filters, order and match mode. A cursor is bound to
/// [`SearchKey::query`]; a cached first page is stored under
/// [`SearchKey::first_page`], which adds its size. The cache takes this
/// type and nothing from the HTTP layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchKey(String);

impl SearchKey {
    /// The query without paging: 16 hex digits of a BLAKE3 hash.
    pub fn query(request: &Request) -> SearchKey {
        let text = serde_json::json!([matched_set(request), request.sort.name()]).to_string();
        SearchKey(blake3::hash(text.as_bytes()).to_hex()[..16].to_owned())
    }

    /// The query and the page size, and the facets asked for: a first
    /// page's answer.
    pub fn first_page(request: &Request) -> SearchKey {
        let query = SearchKey::query(request).0;
        if request.facets.is_empty() {
            return SearchKey(format!("{query}:{}", request.limit));
        }
        SearchKey(format!(
            "{query}:{}:{}:{}",
            request.limit,
            request.facet_size,
            request.facets.join(",")
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A key for another kind of answer, from the text that names it: a
    /// kind's prefix and 16 hex digits of its BLAKE3 hash.
    pub(super) fn hashed(kind: &str, text: &str) -> SearchKey {
        let hash = blake3::hash(text.as_bytes()).to_hex();
        SearchKey(format!("{kind}:{}", &hash[..16]))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub source: SourceId,
    pub key: Key,
    /// The stored attributes, a JSON object; `None` for a source without.
    pub attributes: Option<String>,
    pub title: Option<String>,
    /// HTML: escaped text with `<em>` around the matches.
    pub snippet: String,
    pub created_at: i64,
    pub rank: Rank,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Every matching row, exactly, regardless of paging.
    pub total: u64,
    /// The same by source position; they sum to `total`.
    pub by_source: SourceCounts,
    pub hits: Vec<Hit>,
    /// The facets asked for, over every match, in the order asked.
    pub facets: Vec<FacetCounts>,
}

/// What decides which rows match, not their order or the page: keywords,
/// synonyms, filters and the match mode. Both keys start from it.
pub(super) fn matched_set(request: &Request) -> serde_json::Value {
    // Every field named, so that a new one is a compile error here: a
    // field that decides the rows and is left out of the key would make
    // cached answers wrong, with no error.
    let Request {
        keywords,
        synonyms,
        filter,
        morph,
        sort: _,
        offset: _,
        limit: _,
        after: _,
        now: _,
        facets: _,
        facet_size: _,
    } = request;
    let Filter {
        source,
        attributes,
        from,
        to,
        ranges,
    } = filter;
    let keywords: Vec<&str> = keywords.iter().map(Keyword::as_str).collect();
    let synonyms: Vec<Vec<&str>> = synonyms
        .iter()
        .map(|forms| forms.iter().map(Keyword::as_str).collect())
        .collect();
    serde_json::json!([
        keywords,
        synonyms,
        source.map(SourceId::index),
        attributes,
        from,
        to,
        ranges
            .iter()
            .map(|NumberRange { name, gte, lte }| (name, gte, lte))
            .collect::<Vec<_>>(),
        morph
    ])
}

/// What a query's per-segment total depends on: the matched set, and the
/// analyzer that morpheme matches were indexed with.
pub(super) fn totals_key(request: &Request) -> String {
    serde_json::json!([matched_set(request), morph::analyzer().name()]).to_string()
}
