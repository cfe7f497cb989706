//! Query execution: exact substring matching, three orders, exact totals.
//!
//! Every keyword becomes a query that matches exactly the rows whose
//! normalized title or content contains it:
//! - 1 character: one term of `chars`;
//! - 2 characters: one term of `grams2`;
//! - 3 characters: one term of `grams3`;
//! - 4 characters: one term of `grams4`;
//! - longer: a slop-0 phrase of the fewest 4-grams that pin every character.
//!
//! So a keyword of up to 4 characters, the bulk of what people type, is
//! counted from one posting list with no position to check, and a longer
//! one checks positions only where its rare 4-grams all occur.
//!
//! The total is exact, and split by source: every match
//! is visited once per segment and the counts are kept per segment (see
//! `Generation::totals`), so later queries only find their top-k.
//! Segments are sorted by `created_at` descending, so the newest-first top-k
//! of a segment is final as soon as a match is older than the k-th best; the
//! rest of the segment is only counted. Large segments are cut in two halves
//! scanned in parallel (a scorer can `seek` to the middle), because one merged
//! segment would otherwise leave a core idle. A time filter (`from`, `to`)
//! is a contiguous range of each sorted segment: only that range is read.
//!
//! A search can be stopped: its [`Budget`] is checked at the start of
//! every scanned range and after every 4,096 matches the scorer yields, so
//! a request that timed out or whose client left stops using a core soon
//! after, instead of finishing a scan nobody reads. The scorer's own work
//! between two matches is not interrupted: a phrase of common grams that
//! rarely occur together can run on until its next match or the range's
//! end.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, EnableScoring, Occur, PhraseQuery, Query, TermQuery,
    Weight,
};
use tantivy::schema::{Field, IndexRecordOption, Term, Value};
use tantivy::{DocAddress, DocId, DocSet, Searcher, SegmentReader, TantivyDocument, TERMINATED};

use super::morph;
use super::schema::Fields;
use super::tokenizer::fourgram_cover;
use super::{Generation, IndexError, Result};
use chaja_core::model::Key;
use chaja_core::sources::{SourceId, MAX_SOURCES};
use chaja_core::text::{highlight, lead, Keyword, SNIPPET_CHARS, TITLE_CHARS};

/// Segments with more documents than this are scanned as two halves.
const SPLIT_DOCS: u32 = 32_768;

/// Title matches weigh this much more than content matches in relevance.
const TITLE_BOOST: f32 = 2.0;

/// Added to the score of rows that contain the exact substring, under
/// `match=morph`: more than any sum of BM25 scores of a short query, small
/// enough that f32 keeps BM25's differences beside it.
const EXACT_TIER: f32 = 10_000.0;

/// The recency factor of `sort=relevance`: BM25 × (1 + 0.2 × 2^(−age/180 d)).
/// A post from today weighs up to 20% more than an equally relevant one
/// from years ago; relevance still decides between posts of any age.
const RECENCY_WEIGHT: f32 = 0.2;
const RECENCY_HALF_LIFE_DAYS: f32 = 180.0;

fn with_recency(score: f32, created_at: i64, now: i64) -> f32 {
    let (tier, bm25) = if score >= EXACT_TIER {
        (EXACT_TIER, score - EXACT_TIER)
    } else {
        (0.0, score)
    };
    let age_days = now.saturating_sub(created_at).max(0) as f32 / 86_400_000.0;
    tier + bm25 * (1.0 + RECENCY_WEIGHT * 0.5f32.powf(age_days / RECENCY_HALF_LIFE_DAYS))
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
}

/// A hit's place in the requested order: larger comes first. Cursors carry
/// it, and the next page takes only ranks below it.
pub type Rank = (i64, i64, u64);

fn rank(sort: Sort, created_at: i64, uid: u64, score: f32) -> Rank {
    match sort {
        Sort::Recent => (0, created_at, uid),
        Sort::Oldest => (0, -created_at, u64::MAX - uid),
        // BM25 scores are never negative, so their bits order like them.
        Sort::Relevance => (i64::from(score.max(0.0).to_bits()), created_at, uid),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub source: Option<SourceId>,
    /// `attr.<name>=<value>`: rows whose attribute has this value, all of
    /// them; sorted by name, so that equal filters make equal keys.
    pub attributes: Vec<(String, String)>,
    /// Inclusive bounds on `created_at`, in milliseconds.
    pub from: Option<i64>,
    pub to: Option<i64>,
}

impl Filter {
    fn accepts(&self, created_at: i64, uid: u64) -> bool {
        self.source
            .is_none_or(|source| super::uid_source(uid) == source.index())
            && self.from.is_none_or(|from| created_at >= from)
            && self.to.is_none_or(|to| created_at <= to)
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
}

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
        }
    }

    /// Keyword `i` and its synonyms.
    fn forms(&self, i: usize) -> impl Iterator<Item = &Keyword> {
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
    fn as_str(self) -> &'static str {
        match self {
            Sort::Recent => "recent",
            Sort::Oldest => "oldest",
            Sort::Relevance => "relevance",
        }
    }
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
        let text = serde_json::json!([matched_set(request), request.sort.as_str()]).to_string();
        SearchKey(blake3::hash(text.as_bytes()).to_hex()[..16].to_owned())
    }

    /// The query and the page size: a first page's answer.
    pub fn first_page(request: &Request) -> SearchKey {
        SearchKey(format!("{}:{}", SearchKey::query(request).0, request.limit))
    }

    pub fn as_str(&self) -> &str {
        &self.0
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
}

/// The query of a request: the substring set (or, with `match=morph`, the
/// substring set plus morpheme matches), scored for relevance when asked.
pub fn build_query(fields: &Fields, request: &Request, scoring: bool) -> Box<dyn Query> {
    // Only relevance and morpheme matching look at morphemes: a newest-first
    // substring search skips the dictionary lookup.
    let mut morphemes: Vec<String> = if request.morph || scoring {
        request
            .keywords
            .iter()
            .flat_map(|k| morph::analyzer().morphemes(k.as_str()))
            .collect()
    } else {
        Vec::new()
    };
    morphemes.sort_unstable();
    morphemes.dedup();
    let text: Box<dyn Query> = if morphemes.is_empty() {
        substring_query(fields, request, scoring)
    } else if request.morph {
        let exact = substring_query(fields, request, false);
        Box::new(BooleanQuery::new(vec![
            (
                Occur::Should,
                Box::new(ConstScoreQuery::new(exact, EXACT_TIER)),
            ),
            (Occur::Should, morph_query(fields, &morphemes, Occur::Must)),
        ]))
    } else if scoring {
        // The set is the substring set; morphemes only score it.
        let exact = substring_query(fields, request, false);
        Box::new(BooleanQuery::new(vec![
            (Occur::Must, Box::new(BoostQuery::new(exact, 0.0))),
            (
                Occur::Should,
                morph_query(fields, &morphemes, Occur::Should),
            ),
        ]))
    } else {
        substring_query(fields, request, false)
    };
    let mut must: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text)];
    for (name, value) in &request.filter.attributes {
        let term = Term::from_field_text(fields.attrs, &format!("{name}={value}"));
        let query: Box<dyn Query> = Box::new(TermQuery::new(term, IndexRecordOption::Basic));
        // Must, but without adding to the score.
        must.push((Occur::Must, Box::new(BoostQuery::new(query, 0.0))));
    }
    if must.len() == 1 {
        return must.pop().expect("one clause").1;
    }
    Box::new(BooleanQuery::new(must))
}

/// The rows whose normalized title or content contains every keyword (or,
/// for a keyword with synonyms, any of its forms).
fn substring_query(fields: &Fields, request: &Request, scoring: bool) -> Box<dyn Query> {
    let mut must: Vec<(Occur, Box<dyn Query>)> = (0..request.keywords.len())
        .map(|i| {
            let mut forms: Vec<(Occur, Box<dyn Query>)> = request
                .forms(i)
                .map(|k| (Occur::Should, keyword_query(fields, k, scoring)))
                .collect();
            let clause = if forms.len() == 1 {
                forms.pop().expect("one form").1
            } else {
                Box::new(BooleanQuery::new(forms))
            };
            (Occur::Must, clause)
        })
        .collect();
    if must.len() == 1 {
        return must.pop().expect("one clause").1;
    }
    Box::new(BooleanQuery::new(must))
}

/// Each morpheme in the title (boosted) or the content; `occur` says whether
/// every morpheme must be there or each only adds to the score.
fn morph_query(fields: &Fields, morphemes: &[String], occur: Occur) -> Box<dyn Query> {
    let clauses = morphemes
        .iter()
        .map(|m| {
            let in_title = term_query(fields.title_morph, m, IndexRecordOption::WithFreqs);
            let in_content = term_query(fields.content_morph, m, IndexRecordOption::WithFreqs);
            let either: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
                (
                    Occur::Should,
                    Box::new(BoostQuery::new(in_title, TITLE_BOOST)),
                ),
                (Occur::Should, in_content),
            ]));
            (occur, either)
        })
        .collect();
    Box::new(BooleanQuery::new(clauses))
}

fn keyword_query(fields: &Fields, keyword: &Keyword, scoring: bool) -> Box<dyn Query> {
    let text = keyword.as_str();
    match keyword.char_len() {
        0 => unreachable!("keywords are never empty"),
        1 => term_query(fields.chars, text, IndexRecordOption::Basic),
        2 => term_query(fields.grams2, text, IndexRecordOption::Basic),
        3 => term_query(fields.grams3, text, IndexRecordOption::Basic),
        4 => {
            let option = if scoring {
                IndexRecordOption::WithFreqs
            } else {
                IndexRecordOption::Basic
            };
            term_query(fields.grams4, text, option)
        }
        _ => {
            let terms = fourgram_cover(text)
                .into_iter()
                .map(|(offset, gram)| (offset, Term::from_field_text(fields.grams4, &gram)))
                .collect();
            Box::new(PhraseQuery::new_with_offset(terms))
        }
    }
}

fn term_query(field: Field, text: &str, option: IndexRecordOption) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(field, text), option))
}

/// The keywords and each keyword's synonyms, as text, for keys.
fn words(request: &Request) -> (Vec<&str>, Vec<Vec<&str>>) {
    let keywords = request.keywords.iter().map(|k| k.as_str()).collect();
    let synonyms = request
        .synonyms
        .iter()
        .map(|forms| forms.iter().map(|k| k.as_str()).collect())
        .collect();
    (keywords, synonyms)
}

/// What decides which rows match, not their order or the page: keywords,
/// synonyms, filters and the match mode. Both keys below start from it.
fn matched_set(request: &Request) -> serde_json::Value {
    let (keywords, synonyms) = words(request);
    let f = &request.filter;
    serde_json::json!([
        keywords,
        synonyms,
        f.source.map(SourceId::index),
        f.attributes,
        f.from,
        f.to,
        request.morph
    ])
}

/// What a query's per-segment total depends on: the matched set, and the
/// analyzer that morpheme matches were indexed with.
fn totals_key(request: &Request) -> String {
    serde_json::json!([matched_set(request), morph::analyzer().name()]).to_string()
}

/// Matches a scan visits between two looks at its [`Budget`]: a look is
/// an atomic load and a clock read, a match is tens of nanoseconds.
const BUDGET_EVERY_MATCHES: u32 = 4096;

/// When a search must stop: the request that wanted it is gone, or its
/// deadline passed. Cloned into the blocking task; the request side keeps
/// a [`StopOnDrop`], so a future dropped by a timeout or by a client that
/// hung up stops the work it started.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Budget {
    /// No deadline; stops only when told to.
    pub fn unlimited() -> Budget {
        Budget::default()
    }

    pub fn until(deadline: Instant) -> Budget {
        Budget {
            stop: Arc::default(),
            deadline: Some(deadline),
        }
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// A guard that stops the search when dropped, unless disarmed.
    pub fn stop_on_drop(&self) -> StopOnDrop {
        StopOnDrop(Some(self.clone()))
    }

    fn exhausted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn check(&self) -> std::result::Result<(), ScanError> {
        if self.exhausted() {
            Err(ScanError::Stopped)
        } else {
            Ok(())
        }
    }
}

/// Stops its search when dropped; [`StopOnDrop::disarm`] once the answer
/// is in.
pub struct StopOnDrop(Option<Budget>);

impl StopOnDrop {
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(budget) = &self.0 {
            budget.stop();
        }
    }
}

/// Why a scan gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// Its budget ran out: the deadline passed or nobody waits for it.
    #[error("the search was stopped: its deadline passed or its client left")]
    Stopped,
    #[error(transparent)]
    Index(#[from] IndexError),
}

impl From<tantivy::TantivyError> for ScanError {
    fn from(e: tantivy::TantivyError) -> ScanError {
        ScanError::Index(e.into())
    }
}

/// What one scanned range of one segment found.
#[derive(Default)]
struct Partial {
    counts: SourceCounts,
    top: Vec<(Rank, DocAddress)>,
}

/// Matches by source position (the low bits of their uid).
pub type SourceCounts = [u64; MAX_SOURCES];

fn add_counts(sum: &mut SourceCounts, more: &SourceCounts) {
    for (s, m) in sum.iter_mut().zip(more) {
        *s += m;
    }
}

/// Runs a search on one generation. Blocking: call it off the async workers.
pub fn search(generation: &Generation, request: &Request) -> Result<Response> {
    search_split(generation, request, SPLIT_DOCS)
}

/// [`search`], cutting segments larger than `split_docs` in two halves;
/// tests use a tiny value to exercise the split on small indexes.
pub fn search_split(
    generation: &Generation,
    request: &Request,
    split_docs: u32,
) -> Result<Response> {
    match search_within(generation, request, &Budget::unlimited(), split_docs) {
        Ok(response) => Ok(response),
        Err(ScanError::Index(e)) => Err(e),
        Err(ScanError::Stopped) => unreachable!("an unlimited budget never runs out"),
    }
}

/// [`search`], stopping when `budget` runs out. Blocking.
pub fn search_budgeted(
    generation: &Generation,
    request: &Request,
    budget: &Budget,
) -> std::result::Result<Response, ScanError> {
    search_within(generation, request, budget, SPLIT_DOCS)
}

/// The doc ids of a sorted (newest first) segment whose `created_at` is
/// within the filter's bounds: a contiguous range, found by binary search.
fn time_window(segment: &SegmentReader, filter: &Filter) -> Result<Range<DocId>> {
    let max = segment.max_doc();
    if filter.from.is_none() && filter.to.is_none() {
        return Ok(0..max);
    }
    let created = segment.fast_fields().i64("created_at")?;
    let at = |doc: DocId| created.first(doc).unwrap_or_default();
    let first_doc_where = |pred: &dyn Fn(i64) -> bool| {
        // partition_point over doc ids: `pred` is false, then true.
        let (mut lo, mut hi) = (0, max);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(at(mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    let start = filter.to.map_or(0, |to| first_doc_where(&|t| t <= to));
    let end = filter
        .from
        .map_or(max, |from| first_doc_where(&|t| t < from));
    Ok(start..end.max(start))
}

fn search_within(
    generation: &Generation,
    request: &Request,
    budget: &Budget,
    split_docs: u32,
) -> std::result::Result<Response, ScanError> {
    budget.check()?;
    debug_assert!(!request.keywords.is_empty());
    let searcher = generation.reader.searcher();
    let fields = &generation.fields;
    let scoring = request.sort == Sort::Relevance;
    let query = build_query(fields, request, scoring);
    let enable = if scoring {
        EnableScoring::enabled_from_searcher(&searcher)
    } else {
        EnableScoring::disabled_from_searcher(&searcher)
    };
    let weight = query.weight(enable)?;

    // Segments never change but for deletes, so a segment's total for a
    // query stays true until its delete count moves: a frequent phrase is
    // counted once per segment, and after a commit only new segments are.
    let counts_key: Arc<str> = totals_key(request).into();
    let mut tasks: Vec<(u32, Range<DocId>, Option<SourceCounts>)> = Vec::new();
    let mut keys = Vec::new();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let window = time_window(segment, &request.filter)?;
        let key = (
            segment.segment_id(),
            segment.num_deleted_docs(),
            counts_key.clone(),
        );
        let known_total = generation.totals.get(&key);
        // A known total still leaves the top-k to find: halves keep both
        // cores busy for the orders that cannot stop early. The first half
        // carries the segment's total, the second adds nothing to it.
        if window.len() > split_docs as usize {
            let middle = window.start + (window.end - window.start) / 2;
            tasks.push((ord as u32, window.start..middle, known_total));
            tasks.push((
                ord as u32,
                middle..window.end,
                known_total.map(|_| [0; MAX_SOURCES]),
            ));
        } else {
            tasks.push((ord as u32, window, known_total));
        }
        keys.push((key, known_total.is_some()));
    }
    let partials = tasks
        .par_iter()
        .map(|(ord, range, known_total)| {
            let segment = searcher.segment_reader(*ord);
            let work = Work {
                budget,
                scanned: &generation.scanned,
                doc_sources: &generation.doc_sources,
            };
            scan(
                &*weight,
                segment,
                *ord,
                range.clone(),
                *known_total,
                request,
                work,
            )
        })
        .collect::<std::result::Result<Vec<Partial>, ScanError>>()?;
    budget.check()?;
    let mut segment_totals = vec![[0u64; MAX_SOURCES]; keys.len()];
    for ((ord, _, _), partial) in tasks.iter().zip(&partials) {
        add_counts(&mut segment_totals[*ord as usize], &partial.counts);
    }
    for ((key, known), counts) in keys.into_iter().zip(segment_totals) {
        if !known {
            generation.totals.insert(key, counts);
        }
    }

    let mut by_source: SourceCounts = [0; MAX_SOURCES];
    let mut ranked: Vec<(Rank, DocAddress)> = Vec::new();
    for partial in partials {
        add_counts(&mut by_source, &partial.counts);
        ranked.extend(partial.top);
    }
    ranked.sort_unstable_by_key(|entry| Reverse(entry.0));
    let highlighted = request.all_forms();
    let hits = ranked
        .into_iter()
        .skip(request.offset)
        .take(request.limit)
        .map(|(rank, address)| load_hit(&searcher, fields, &highlighted, rank, address))
        .collect::<Result<Vec<Hit>>>()?;
    Ok(Response {
        total: by_source.iter().sum(),
        by_source,
        hits,
    })
}

/// What a scan answers to: when to stop, and where to count its reads.
#[derive(Clone, Copy)]
struct Work<'a> {
    budget: &'a Budget,
    scanned: &'a std::sync::atomic::AtomicU64,
    doc_sources: &'a super::DocSources,
}

/// The source position of every document of `segment`, one byte each:
/// what counting by source reads per match, instead of a 64-bit `uid`
/// (1 MB for a million documents, kept per segment).
fn doc_sources(
    cache: &super::DocSources,
    segment: &SegmentReader,
) -> std::result::Result<Arc<[u8]>, ScanError> {
    cache
        .try_get_with(segment.segment_id(), || {
            let uid = segment.fast_fields().u64("uid")?;
            let max = segment.max_doc();
            let mut sources = Vec::with_capacity(max as usize);
            let mut docs = Vec::with_capacity(4096);
            let mut uids = vec![None; 4096];
            for start in (0..max).step_by(4096) {
                docs.clear();
                docs.extend(start..max.min(start + 4096));
                let uids = &mut uids[..docs.len()];
                uids.fill(None);
                uid.first_vals(&docs, uids);
                sources.extend(
                    uids.iter()
                        .map(|u| super::uid_source(u.unwrap_or_default()) as u8),
                );
            }
            Ok::<_, tantivy::TantivyError>(Arc::from(sources))
        })
        .map_err(|e| ScanError::Index(IndexError::Tantivy((*e).clone())))
}

/// Scans `range` of one segment: counts every match and keeps the best k.
/// `known_total` is the segment's total when the postings already say it;
/// the scan then stops as soon as the top-k is final.
fn scan(
    weight: &dyn Weight,
    segment: &SegmentReader,
    ord: u32,
    range: Range<DocId>,
    known_total: Option<SourceCounts>,
    request: &Request,
    work: Work,
) -> std::result::Result<Partial, ScanError> {
    let Work {
        budget,
        scanned: scanned_counter,
        doc_sources: doc_sources_cache,
    } = work;
    budget.check()?;
    let now = request.now;
    let k = request.offset + request.limit;
    let mut scorer = weight.scorer(segment, 1.0)?;
    let created = segment.fast_fields().i64("created_at")?;
    let uid = segment.fast_fields().u64("uid")?;
    let alive = segment.alive_bitset();
    let filter = &request.filter;
    // Only newest-first follows the segment order.
    let can_stop = request.sort == Sort::Recent;

    let mut top: BinaryHeap<Reverse<(Rank, DocId)>> = BinaryHeap::with_capacity(k + 1);
    let mut counts: SourceCounts = [0; MAX_SOURCES];
    let mut scanned: u64 = 0;
    let mut until_look: u32 = BUDGET_EVERY_MATCHES;
    let mut doc = scorer.doc();
    if doc < range.start {
        doc = scorer.seek(range.start);
    }
    // Collecting: every match is ranked until the top-k is final.
    let mut counting_only = k == 0;
    while !counting_only && doc < range.end {
        debug_assert!(doc != TERMINATED);
        scanned += 1;
        until_look -= 1;
        if until_look == 0 {
            until_look = BUDGET_EVERY_MATCHES;
            if budget.exhausted() {
                scanned_counter.fetch_add(scanned, Ordering::Relaxed);
                return Err(ScanError::Stopped);
            }
        }
        if alive.is_some_and(|a| a.is_deleted(doc)) {
            doc = scorer.advance();
            continue;
        }
        let created_at = created.first(doc).unwrap_or_default();
        let doc_uid = uid.first(doc).unwrap_or_default();
        if can_stop && top.len() == k {
            let kth = top.peek().map_or(i64::MIN, |Reverse((r, _))| r.1);
            if created_at < kth {
                // Sorted segment: nothing from here on can enter the top;
                // this match and the rest are only counted (and visited
                // there).
                scanned -= 1;
                counting_only = true;
                break;
            }
        }
        if filter.accepts(created_at, doc_uid) {
            counts[super::uid_source(doc_uid)] += 1;
            let score = if request.sort == Sort::Relevance {
                with_recency(scorer.score(), created_at, now)
            } else {
                0.0
            };
            let r = rank(request.sort, created_at, doc_uid, score);
            if request.after.is_none_or(|after| r < after) {
                if top.len() < k {
                    top.push(Reverse((r, doc)));
                } else if top.peek().is_some_and(|Reverse(min)| (r, doc) > *min) {
                    top.pop();
                    top.push(Reverse((r, doc)));
                }
            }
        }
        doc = scorer.advance();
    }
    if counting_only && known_total.is_none() {
        let sources = doc_sources(doc_sources_cache, segment)?;
        let counted = count_rest(
            &mut *scorer,
            range.end,
            alive,
            &sources,
            filter.source,
            &mut counts,
            budget,
        );
        match counted {
            Ok(visited) => scanned += visited,
            Err(visited) => {
                scanned_counter.fetch_add(scanned + visited, Ordering::Relaxed);
                return Err(ScanError::Stopped);
            }
        }
    }
    scanned_counter.fetch_add(scanned, Ordering::Relaxed);
    Ok(Partial {
        counts: known_total.unwrap_or(counts),
        top: top
            .into_iter()
            .map(|Reverse((r, doc))| (r, DocAddress::new(ord, doc)))
            .collect(),
    })
}

/// Counts the scorer's matches from its current document up to `end`, by
/// source, in blocks: one call into the scorer per 64 matches, and one
/// byte read per match for its source (`doc_sources`). For a keyword in
/// most rows this loop is the whole cost of its first query. `end` is
/// within the filter's time window (see `time_window`), so time needs no
/// check here. The matches visited; `Err` when the budget ran out.
fn count_rest(
    scorer: &mut dyn tantivy::query::Scorer,
    end: DocId,
    alive: Option<&tantivy::fastfield::AliveBitSet>,
    sources: &[u8],
    only_source: Option<SourceId>,
    counts: &mut SourceCounts,
    budget: &Budget,
) -> std::result::Result<u64, u64> {
    let mut docs = [0 as DocId; tantivy::COLLECT_BLOCK_BUFFER_LEN];
    let only = only_source.map(|s| s.index() as u8);
    let mut scanned = 0u64;
    let mut since_look = 0u32;
    while scorer.doc() < end {
        let filled = scorer.fill_buffer(&mut docs);
        // Sorted, so the ones before `end` come first.
        let n = docs[..filled].partition_point(|&d| d < end);
        scanned += n as u64;
        for &doc in &docs[..n] {
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                continue;
            }
            let source = sources[doc as usize];
            if only.is_none_or(|s| s == source) {
                counts[usize::from(source)] += 1;
            }
        }
        if n < filled {
            break;
        }
        since_look += n as u32;
        if since_look >= BUDGET_EVERY_MATCHES {
            since_look = 0;
            if budget.exhausted() {
                return Err(scanned);
            }
        }
    }
    Ok(scanned)
}

fn load_hit(
    searcher: &Searcher,
    fields: &Fields,
    keywords: &[Keyword],
    rank: Rank,
    address: DocAddress,
) -> Result<Hit> {
    let doc: TantivyDocument = searcher.doc(address)?;
    let text = |field| {
        doc.get_first(field)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let title = text(fields.title);
    let attributes = text(fields.attributes);
    let key_term = text(fields.key).unwrap_or_default();
    // The snippet comes from the first body field that holds a match, or
    // the first one.
    let content = text(fields.content).unwrap_or_default();
    let bodies: Vec<&str> = content.split(super::BODY_SEPARATOR).collect();
    let snippet = bodies
        .iter()
        .find_map(|body| highlight(body, keywords, SNIPPET_CHARS))
        .unwrap_or_else(|| lead(bodies.first().copied().unwrap_or(""), SNIPPET_CHARS));
    // HTML like the snippet, so that a page can render both the same way:
    // escaped, with the matches in `<em>`.
    let title = title.map(|title| {
        highlight(&title, keywords, TITLE_CHARS).unwrap_or_else(|| lead(&title, TITLE_CHARS))
    });
    let segment = searcher.segment_reader(address.segment_ord);
    let created_at = segment
        .fast_fields()
        .i64("created_at")?
        .first(address.doc_id)
        .unwrap_or_default();
    let uid = segment
        .fast_fields()
        .u64("uid")?
        .first(address.doc_id)
        .unwrap_or_default();
    let (source, key_text) = super::parse_key_term(&key_term)
        .ok_or_else(|| IndexError::invalid(format!("bad stored key {key_term:?}")))?;
    let key = match key_text.parse() {
        Ok(i) if !super::uid_has_string_key(uid) => Key::Int(i),
        _ => Key::Str(key_text.to_owned()),
    };
    Ok(Hit {
        source,
        key,
        attributes,
        title,
        snippet,
        created_at,
        rank,
    })
}
