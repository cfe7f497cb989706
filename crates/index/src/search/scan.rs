//! The scan: each segment range's matches, the top-k kept in the
//! requested order, every match counted by source.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tantivy::columnar::Column;
use tantivy::query::Weight;
use tantivy::{DocAddress, DocId, DocSet, SegmentReader, Term, TERMINATED};

use chaja_core::sources::{SourceId, MAX_SOURCES};

use super::budget::{Budget, ScanError, BUDGET_EVERY_MATCHES};
use super::count::{self, deleted_docs, DeletedDocs, TermBits};
use super::kept::{self, Sets};
use super::query::EXACT_TIER;
use super::request::{rank, Filter, Rank, Request, Sort};
use super::{Partial, SourceCounts};
use crate::attributes::{AttrRequest, SegmentAttrs};
use crate::columns::SegmentColumns;
use crate::order;
use crate::{tag_source, DocSources};
use crate::{IndexError, Result};

/// The recency factor of `sort=relevance`: BM25 × (1 + 0.2 × 2^(−age/180 d)).
/// A post from today weighs up to 20% more than an equally relevant one
/// from years ago; relevance still decides between posts of any age.
pub(super) const RECENCY_WEIGHT: f32 = 0.2;
pub(super) const RECENCY_HALF_LIFE_DAYS: f32 = 180.0;

pub(super) fn with_recency(score: f32, created_at: i64, now: i64) -> f32 {
    let (tier, bm25) = if score >= EXACT_TIER {
        (EXACT_TIER, score - EXACT_TIER)
    } else {
        (0.0, score)
    };
    let age_days = now.saturating_sub(created_at).max(0) as f32 / 86_400_000.0;
    tier + bm25 * (1.0 + RECENCY_WEIGHT * 0.5f32.powf(age_days / RECENCY_HALF_LIFE_DAYS))
}

/// What a search reads of a segment: for each run of a source the filter
/// passes (see `order`), the part within the filter's time bounds, each
/// with its source position. Empty parts are left out.
pub(super) fn windows(columns: &SegmentColumns, filter: &Filter) -> Vec<(usize, Range<DocId>)> {
    let timed = filter.from.is_some() || filter.to.is_some();
    let mut windows = Vec::new();
    for (source, run) in columns.runs.iter().cloned() {
        if filter.source.is_some_and(|only| only.index() != source) {
            continue;
        }
        let window = match timed {
            true => time_window(&columns.created, run, filter.from, filter.to),
            false => run,
        };
        if !window.is_empty() {
            windows.push((source, window));
        }
    }
    windows
}

/// The doc ids of `run` (newest first) whose `created_at` is within the
/// inclusive bounds: a contiguous range, found by binary search.
pub(super) fn time_window(
    created: &Column<i64>,
    run: Range<DocId>,
    from: Option<i64>,
    to: Option<i64>,
) -> Range<DocId> {
    let at = |doc: DocId| created.first(doc).unwrap_or_default();
    let start = to.map_or(run.start, |to| {
        order::partition_point(run.clone(), |doc| at(doc) <= to)
    });
    let end = from.map_or(run.end, |from| {
        order::partition_point(start..run.end, |doc| at(doc) < from)
    });
    start..end.max(start)
}

/// What a scan answers to: when to stop, and where to count its reads.
#[derive(Clone, Copy)]
pub(super) struct Work<'a> {
    /// The segment's columns, opened by the view.
    pub(super) columns: &'a SegmentColumns,
    pub(super) budget: &'a Budget,
    pub(super) scanned: &'a std::sync::atomic::AtomicU64,
    pub(super) doc_sources: &'a DocSources,
    pub(super) attr_arrays: &'a crate::attributes::AttrArrays,
    pub(super) patches: &'a crate::patches::Patches,
    /// The terms whose postings' intersection is exactly the request's
    /// matches, when there are such terms (see `count::terms`).
    pub(super) terms: Option<&'a [Term]>,
    pub(super) deleted: &'a DeletedDocs,
    pub(super) term_bits: &'a TermBits,
    /// The request's matches as sets of documents, when one keyword is
    /// longer than four characters or morphemes match (see `kept`).
    pub(super) sets: Option<&'a Sets>,
}

/// One range of one segment to scan: part of a run of one source.
pub(super) struct Task {
    /// The segment's position in the searcher.
    pub(super) ord: u32,
    /// The source position of every document in `range`.
    pub(super) source: usize,
    pub(super) range: Range<DocId>,
    /// The range's total when the segment's is known: the segment's on its
    /// first task, zeros on the others.
    pub(super) known_total: Option<SourceCounts>,
    /// Whether the range counts the request's facets (a segment whose facet
    /// counts are cached does not).
    pub(super) count_facets: bool,
}

/// The source position of every document of `segment`, one byte each:
/// what counting by source reads per match, instead of a 64-bit `tag`
/// (1 MB for a million documents, kept per segment).
pub(crate) fn doc_sources(cache: &DocSources, segment: &SegmentReader) -> Result<Arc<[u8]>> {
    cache
        .try_get_with(segment.segment_id(), || {
            let tag = segment.fast_fields().u64("tag")?;
            let max = segment.max_doc();
            let mut sources = Vec::with_capacity(max as usize);
            let mut docs = Vec::with_capacity(4096);
            let mut tags = vec![None; 4096];
            for start in (0..max).step_by(4096) {
                docs.clear();
                docs.extend(start..max.min(start + 4096));
                let tags = &mut tags[..docs.len()];
                tags.fill(None);
                tag.first_vals(&docs, tags);
                sources.extend(tags.iter().map(|t| tag_source(t.unwrap_or_default()) as u8));
            }
            Ok::<_, tantivy::TantivyError>(Arc::from(sources))
        })
        .map_err(|e| IndexError::Tantivy((*e).clone()))
}

/// Scans a task's range of one segment: counts every match and keeps the
/// best k. With the range's total known, the scan stops as soon as the
/// top-k is final. Otherwise the matches after that are counted: from the
/// postings when one term is the whole query (see `count`), else one by
/// one.
pub(super) fn scan(
    weight: &dyn Weight,
    segment: &SegmentReader,
    task: &Task,
    request: &Request,
    work: Work,
) -> std::result::Result<Partial, ScanError> {
    let Work {
        columns,
        budget,
        scanned: scanned_counter,
        doc_sources: doc_sources_cache,
        attr_arrays,
        patches,
        terms,
        deleted,
        term_bits,
        sets,
    } = work;
    let Task {
        ord,
        source: range_source,
        ref range,
        known_total,
        count_facets,
    } = *task;
    let range = range.clone();
    budget.check()?;
    let now = request.now;
    let k = request.offset + request.limit;
    let mut scorer = weight.scorer(segment, 1.0)?;
    let (created, uid, tag) = (&columns.created, &columns.uid, &columns.tag);
    let alive = segment.alive_bitset();
    let filter = &request.filter;
    let order = match &request.sort {
        Sort::Attribute(order) => Some(order),
        _ => None,
    };
    let facets: &[String] = if count_facets { &request.facets } else { &[] };
    let wanted = AttrRequest {
        ranges: &filter.ranges,
        order,
        facets,
        equalities: &filter.attributes,
    };
    let patched = patches.segment(segment.segment_id()).cloned();
    let mut attrs = SegmentAttrs::open(segment, wanted, attr_arrays, patched)?;
    // Only newest-first follows the segment order.
    let can_stop = request.sort == Sort::Recent;
    if order.is_some() && k > 0 {
        let sources = doc_sources(doc_sources_cache, segment)?;
        let mut ranked = Ranked {
            sort: &request.sort,
            top: BinaryHeap::with_capacity(k + 1),
            k,
            after: request.after,
            counts: [0; MAX_SOURCES],
        };
        if scorer.doc() < range.start {
            scorer.seek(range.start);
        }
        let visited = by_attribute(
            &mut *scorer,
            range.end,
            alive,
            &sources,
            filter.source,
            &mut attrs,
            columns,
            &mut ranked,
            budget,
        );
        let visited = match visited {
            Ok(visited) => visited,
            Err(visited) => {
                scanned_counter.fetch_add(visited, Ordering::Relaxed);
                return Err(ScanError::Stopped);
            }
        };
        scanned_counter.fetch_add(visited, Ordering::Relaxed);
        return Ok(Partial {
            counts: known_total.unwrap_or(ranked.counts),
            facets: attrs.facet_values()?,
            top: ranked
                .top
                .into_iter()
                .map(|Reverse((r, doc))| (r, DocAddress::new(ord, doc)))
                .collect(),
        });
    }

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
        let doc_tag = tag.first(doc).unwrap_or_default();
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
        if filter.accepts(created_at, doc_tag) && attrs.accepts(doc) {
            counts[tag_source(doc_tag)] += 1;
            attrs.count(doc);
            let score = if request.sort == Sort::Relevance {
                with_recency(scorer.score(), created_at, now)
            } else {
                0.0
            };
            let doc_uid = uid.first(doc).unwrap_or_default();
            let first = attrs.rank_part(doc);
            let r = rank(&request.sort, created_at, doc_uid, doc_tag, score, first);
            if request.after.is_none_or(|after| r < after) {
                offer(&mut top, k, (r, doc));
            }
        }
        doc = scorer.advance();
    }
    // The remaining matches of keywords that are one term each are counted
    // from their postings when nothing but the range decides what counts.
    let mut counted = false;
    if counting_only && known_total.is_none() && attrs.is_empty() && doc < range.end {
        if let Some(terms) = terms {
            let gone = deleted_docs(deleted, segment);
            if let Some(n) = count::in_range(segment, terms, doc..range.end, &gone, term_bits)? {
                counts[range_source] += n;
                counted = true;
            }
        } else if let Some(sets) = sets {
            let gone = deleted_docs(deleted, segment);
            // The run of the range's source, which holds the range.
            let run = columns
                .runs
                .iter()
                .find(|(source, _)| *source == range_source)
                .map_or(0..segment.max_doc(), |(_, run)| run.clone());
            let range = doc..range.end;
            let kept = kept::in_range(
                segment,
                sets,
                run,
                range,
                &gone,
                term_bits,
                budget,
                scanned_counter,
            );
            if let Some(n) = kept? {
                counts[range_source] += n;
                counted = true;
            }
        }
    }
    if counting_only && !counted && (known_total.is_none() || attrs.has_facets()) {
        let sources = doc_sources(doc_sources_cache, segment)?;
        let per_match = (!attrs.is_empty()).then_some(&mut attrs);
        let counted = count_rest(
            &mut *scorer,
            range.end,
            alive,
            &sources,
            filter.source,
            &mut counts,
            per_match,
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
        facets: attrs.facet_values()?,
        top: top
            .into_iter()
            .map(|Reverse((r, doc))| (r, DocAddress::new(ord, doc)))
            .collect(),
    })
}

/// Keeps `entry` if it is among the best `k` so far.
pub(super) fn offer(top: &mut BinaryHeap<Reverse<(Rank, DocId)>>, k: usize, entry: (Rank, DocId)) {
    if top.len() < k {
        top.push(Reverse(entry));
    } else if top.peek().is_some_and(|Reverse(min)| entry > *min) {
        top.pop();
        top.push(Reverse(entry));
    }
}

/// Calls `f` with each match from the scorer's current document up to
/// `end` that is alive, of `only_source` (when set) and within `attrs`'
/// ranges, once `attrs` has counted it in its facets; `f` gets the match,
/// its source position and `attrs`. Reads in blocks: one call into the
/// scorer per 64 matches, and one byte per match for its source
/// (`doc_sources`). `end` is within the filter's time window (see
/// `time_window`), so time needs no check here. The matches visited;
/// `Err` when the budget ran out.
#[allow(clippy::too_many_arguments)]
fn each_match(
    scorer: &mut dyn tantivy::query::Scorer,
    end: DocId,
    alive: Option<&tantivy::fastfield::AliveBitSet>,
    sources: &[u8],
    only_source: Option<SourceId>,
    mut attrs: Option<&mut SegmentAttrs>,
    budget: &Budget,
    mut f: impl FnMut(DocId, u8, Option<&SegmentAttrs>),
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
            if only.is_some_and(|s| s != source) {
                continue;
            }
            if let Some(attrs) = attrs.as_deref_mut() {
                if !attrs.accepts(doc) {
                    continue;
                }
                attrs.count(doc);
            }
            f(doc, source, attrs.as_deref());
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

/// Counts the scorer's matches from its current document up to `end` by
/// source (see [`each_match`]). For a keyword in most rows this loop is the
/// whole cost of its first query. `attrs`, when the request has ranges or
/// facets, checks and counts each match by its columns.
#[allow(clippy::too_many_arguments)]
pub(super) fn count_rest(
    scorer: &mut dyn tantivy::query::Scorer,
    end: DocId,
    alive: Option<&tantivy::fastfield::AliveBitSet>,
    sources: &[u8],
    only_source: Option<SourceId>,
    counts: &mut SourceCounts,
    attrs: Option<&mut SegmentAttrs>,
    budget: &Budget,
) -> std::result::Result<u64, u64> {
    each_match(
        scorer,
        end,
        alive,
        sources,
        only_source,
        attrs,
        budget,
        |_, source, _| counts[usize::from(source)] += 1,
    )
}

/// The top-k so far under an attribute order, and the counts.
struct Ranked<'a> {
    sort: &'a Sort,
    top: BinaryHeap<Reverse<(Rank, DocId)>>,
    k: usize,
    after: Option<Rank>,
    counts: SourceCounts,
}

/// `sort=attr.<name>`: every match from the scorer's document up to `end`
/// is counted as [`count_rest`] counts, and ranked only when its number
/// could still enter the top-k. An attribute order cannot stop early (the
/// segment is sorted by time), so every match is visited; but a rank is
/// `(number, created_at, uid, tag)`, and once the heap is full a match
/// whose number is below the heap's least cannot enter it, nor can one
/// whose number is above the cursor's (it was on an earlier page). Those
/// cost one array read; only the others read the three columns of a full
/// rank. The matches visited; `Err` when the budget ran out.
#[allow(clippy::too_many_arguments)]
fn by_attribute(
    scorer: &mut dyn tantivy::query::Scorer,
    end: DocId,
    alive: Option<&tantivy::fastfield::AliveBitSet>,
    sources: &[u8],
    only_source: Option<SourceId>,
    attrs: &mut SegmentAttrs,
    columns: &SegmentColumns,
    ranked: &mut Ranked<'_>,
    budget: &Budget,
) -> std::result::Result<u64, u64> {
    // The heap's least number once it is full: below it nothing enters.
    let mut floor = i64::MIN;
    let ceiling = ranked.after.map_or(i64::MAX, |after| after.0);
    let rank_one = |doc: DocId, source: u8, attrs: Option<&SegmentAttrs>| {
        ranked.counts[usize::from(source)] += 1;
        let first = attrs.map_or(0, |a| a.rank_part(doc));
        if first > ceiling || (ranked.top.len() == ranked.k && first < floor) {
            return;
        }
        let r = rank(
            ranked.sort,
            columns.created.first(doc).unwrap_or_default(),
            columns.uid.first(doc).unwrap_or_default(),
            columns.tag.first(doc).unwrap_or_default(),
            0.0,
            first,
        );
        if ranked.after.is_some_and(|after| r >= after) {
            return;
        }
        offer(&mut ranked.top, ranked.k, (r, doc));
        if ranked.top.len() == ranked.k {
            floor = ranked
                .top
                .peek()
                .map_or(i64::MIN, |Reverse((min, _))| min.0);
        }
    };
    each_match(
        scorer,
        end,
        alive,
        sources,
        only_source,
        Some(attrs),
        budget,
        rank_one,
    )
}
