//! The scan: each segment range's matches, the top-k kept in the
//! requested order, every match counted by source.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::Ordering;

use tantivy::columnar::Column;
use tantivy::query::{Scorer, Weight};
use tantivy::{DocAddress, DocId, Searcher, SegmentReader, Term, TERMINATED};

use chaja_core::sources::{SourceId, MAX_SOURCES};

use super::bits::deleted_docs;
use super::budget::{Budget, ScanError, BUDGET_EVERY_MATCHES};
use super::contains::ReadFailures;
use super::keyword_count::{self, Sets};
use super::query::EXACT_TIER;
use super::request::{rank, Filter, Rank, Request, Sort};
use super::term_count;
use crate::attributes::{AttrRequest, SegmentAttrs};
use crate::caches::{Caches, SourceCounts};
use crate::columns::SegmentColumns;
use crate::order;
use crate::tag_source;
use crate::Result;

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

/// How a range's matches past its final top-k are counted.
pub(super) enum Count {
    /// Every keyword is one term of up to four characters: their postings'
    /// intersection is the matches, counted from the postings (see
    /// `term_count`).
    Postings(Vec<Term>),
    /// A keyword longer than four characters, or `match=morph`: the
    /// matches as sets of documents, counted from kept bitsets where they
    /// are common (see `keyword_count`).
    Sets(Sets),
    /// Anything else (synonyms, an attribute filter): each match visited.
    Visit,
}

/// What one scanned range of one segment found.
#[derive(Default)]
pub(super) struct Partial {
    pub(super) counts: SourceCounts,
    /// Each requested facet's counts by value, when this range counted
    /// them.
    pub(super) facets: Vec<Vec<(String, u64)>>,
    pub(super) top: Vec<(Rank, DocAddress)>,
}

/// What a scan answers to: when to stop, where to count its reads, and
/// how the search's plan counts what it does not collect.
#[derive(Clone, Copy)]
pub(super) struct Work<'a> {
    /// The segment's columns, opened by the view.
    pub(super) columns: &'a SegmentColumns,
    pub(super) budget: &'a Budget,
    pub(super) caches: &'a Caches,
    pub(super) patches: &'a crate::patches::Patches,
    /// How matches past the top-k are counted (see `plan`).
    pub(super) count: &'a Count,
    /// Where the plan's queries report a candidate they could not read.
    pub(super) failures: &'a ReadFailures,
}

impl Work<'_> {
    /// Counts the matches a block-wise visit read (`Err` when its budget
    /// ran out, with what it read until then), and stops the scan if it
    /// ran out.
    fn visited(
        &self,
        visited: std::result::Result<u64, u64>,
    ) -> std::result::Result<(), ScanError> {
        let (read, stopped) = match visited {
            Ok(read) => (read, false),
            Err(read) => (read, true),
        };
        self.caches.scanned.fetch_add(read, Ordering::Relaxed);
        match stopped {
            true => Err(ScanError::Stopped),
            false => Ok(()),
        }
    }
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

/// One task of one search: the segment, the range and what to find there.
pub(super) struct RangeScan<'a> {
    pub(super) segment: &'a SegmentReader,
    pub(super) task: &'a Task,
    pub(super) request: &'a Request,
    pub(super) work: Work<'a>,
}

/// The best `k` matches so far, in the requested order, of those ranked
/// below the request's cursor.
pub(super) struct TopK {
    heap: BinaryHeap<Reverse<(Rank, DocId)>>,
    k: usize,
    after: Option<Rank>,
    /// The matches offered that ranked below the cursor, kept or not.
    pub(super) eligible: u64,
}

impl TopK {
    pub(super) fn new(request: &Request) -> TopK {
        let k = request.offset + request.limit;
        TopK {
            heap: BinaryHeap::with_capacity(k + 1),
            k,
            after: request.after,
            eligible: 0,
        }
    }

    /// Keeps `doc` if it ranks below the cursor and among the best `k`.
    pub(super) fn offer(&mut self, rank: Rank, doc: DocId) {
        if self.after.is_some_and(|after| rank >= after) {
            return;
        }
        self.eligible += 1;
        offer(&mut self.heap, self.k, (rank, doc));
    }

    /// The `created_at` of the k-th best, once there are `k`: newest
    /// first, no later match of a sorted run can enter past it.
    fn kth_time(&self) -> Option<i64> {
        match self.heap.len() == self.k {
            true => self.heap.peek().map(|Reverse((rank, _))| rank.1),
            false => None,
        }
    }

    pub(super) fn into_hits(self, ord: u32) -> Vec<(Rank, DocAddress)> {
        self.heap
            .into_iter()
            .map(|Reverse((rank, doc))| (rank, DocAddress::new(ord, doc)))
            .collect()
    }
}

impl<'a> RangeScan<'a> {
    pub(super) fn new(
        searcher: &'a Searcher,
        task: &'a Task,
        request: &'a Request,
        work: Work<'a>,
    ) -> RangeScan<'a> {
        RangeScan {
            segment: searcher.segment_reader(task.ord),
            task,
            request,
            work,
        }
    }

    /// The attribute columns the request reads in this segment: its
    /// ranges, its attribute order, and its facets when this range counts
    /// them.
    pub(super) fn attrs(&self) -> Result<SegmentAttrs> {
        let RangeScan {
            segment,
            task,
            request,
            work,
        } = self;
        let filter = &request.filter;
        let order = match &request.sort {
            Sort::Attribute(order) => Some(order),
            _ => None,
        };
        let facets: &[String] = if task.count_facets {
            &request.facets
        } else {
            &[]
        };
        let wanted = AttrRequest {
            ranges: &filter.ranges,
            order,
            facets,
            equalities: &filter.attributes,
        };
        let patched = work.patches.segment(segment.segment_id()).cloned();
        Ok(SegmentAttrs::open(
            segment,
            wanted,
            &work.caches.attr_arrays,
            patched,
        )?)
    }

    /// The one loop that ranks matches: visits `scorer`'s matches from
    /// the range's start, ranks each alive one that the filter and
    /// `attrs` accept, offers it to `top`, and hands it with its `tag` to
    /// `matched`, until the range ends or, newest first, the top-k is
    /// final (a sorted run has nothing newer past a match older than the
    /// k-th best; that match is not visited). Returns the first match not
    /// visited, at or past the range's end when the range was visited
    /// whole.
    pub(super) fn collect(
        &self,
        scorer: &mut dyn Scorer,
        attrs: &mut SegmentAttrs,
        top: &mut TopK,
        mut matched: impl FnMut(DocId, u64),
    ) -> std::result::Result<DocId, ScanError> {
        let RangeScan {
            segment,
            task,
            request,
            work,
        } = self;
        let range = task.range.clone();
        let (created, uid, tag) = (&work.columns.created, &work.columns.uid, &work.columns.tag);
        let alive = segment.alive_bitset();
        // Only newest-first follows the segment order.
        let can_stop = request.sort == Sort::Recent;
        let scoring = request.sort == Sort::Relevance;
        let mut scanned: u64 = 0;
        let mut until_look: u32 = BUDGET_EVERY_MATCHES;
        let mut doc = scorer.doc();
        if doc < range.start {
            doc = scorer.seek(range.start);
        }
        while doc < range.end && top.k > 0 {
            debug_assert!(doc != TERMINATED);
            until_look -= 1;
            if until_look == 0 {
                until_look = BUDGET_EVERY_MATCHES;
                if work.budget.exhausted() {
                    work.caches.scanned.fetch_add(scanned, Ordering::Relaxed);
                    return Err(ScanError::Stopped);
                }
            }
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                scanned += 1;
                doc = scorer.advance();
                continue;
            }
            let created_at = created.first(doc).unwrap_or_default();
            if can_stop && top.kth_time().is_some_and(|kth| created_at < kth) {
                break;
            }
            scanned += 1;
            let doc_tag = tag.first(doc).unwrap_or_default();
            if request.filter.accepts(created_at, doc_tag) && attrs.accepts(doc) {
                matched(doc, doc_tag);
                attrs.count(doc);
                let score = match scoring {
                    true => with_recency(scorer.score(), created_at, request.now),
                    false => 0.0,
                };
                let doc_uid = uid.first(doc).unwrap_or_default();
                let first = attrs.rank_part(doc);
                let r = rank(&request.sort, created_at, doc_uid, doc_tag, score, first);
                top.offer(r, doc);
            }
            doc = scorer.advance();
        }
        work.caches.scanned.fetch_add(scanned, Ordering::Relaxed);
        Ok(doc)
    }

    /// Scans the task's range: counts every match and keeps the best k.
    /// With the range's total known, the scan stops as soon as the top-k
    /// is final. Otherwise the matches after that are counted as the plan
    /// says: from the postings or kept bitsets where they can be, else one
    /// by one.
    pub(super) fn scan(&self, weight: &dyn Weight) -> std::result::Result<Partial, ScanError> {
        let RangeScan {
            segment,
            task,
            request,
            work,
        } = self;
        let Task {
            ord,
            source: range_source,
            ref range,
            known_total,
            count_facets: _,
        } = **task;
        work.budget.check()?;
        let k = request.offset + request.limit;
        let mut scorer = weight.scorer(segment, 1.0)?;
        let alive = segment.alive_bitset();
        let filter = &request.filter;
        let mut attrs = self.attrs()?;
        if let Sort::Attribute(_) = request.sort {
            if k > 0 {
                return self.by_attribute(&mut *scorer, &mut attrs);
            }
        }
        let mut top = TopK::new(request);
        let mut counts: SourceCounts = [0; MAX_SOURCES];
        let doc = self.collect(&mut *scorer, &mut attrs, &mut top, |_, tag| {
            counts[tag_source(tag)] += 1;
        })?;
        // The remaining matches of keywords that are one term each are
        // counted from their postings when nothing but the range decides
        // what counts.
        let mut counted = doc >= range.end;
        if !counted && known_total.is_none() && attrs.is_empty() {
            let rest = doc..range.end;
            let found = match work.count {
                Count::Postings(terms) => {
                    let gone = deleted_docs(&work.caches.deleted, segment);
                    let bits = &work.caches.term_bits;
                    term_count::in_range(segment, terms, rest, &gone, bits)?
                }
                Count::Sets(sets) => {
                    let gone = deleted_docs(&work.caches.deleted, segment);
                    // The run of the range's source, which holds the range.
                    let run = work
                        .columns
                        .runs
                        .iter()
                        .find(|(source, _)| *source == range_source)
                        .map_or(0..segment.max_doc(), |(_, run)| run.clone());
                    keyword_count::in_range(
                        segment,
                        sets,
                        run,
                        rest,
                        &gone,
                        work.caches,
                        work.budget,
                    )?
                }
                Count::Visit => None,
            };
            if let Some(n) = found {
                counts[range_source] += n;
                counted = true;
            }
        }
        if !counted && (known_total.is_none() || attrs.has_facets()) {
            let sources = work.caches.doc_sources(segment)?;
            let per_match = (!attrs.is_empty()).then_some(&mut attrs);
            let visited = count_rest(
                &mut *scorer,
                range.end,
                alive,
                &sources,
                filter.source,
                &mut counts,
                per_match,
                work.budget,
            );
            work.visited(visited)?;
        }
        // A candidate that could not be read must fail the search, not
        // leave a total short.
        work.failures.check()?;
        Ok(Partial {
            counts: known_total.unwrap_or(counts),
            facets: attrs.facet_values()?,
            top: top.into_hits(ord),
        })
    }

    /// `sort=attr.<name>`: every match ranked by its number (see
    /// [`by_attribute`]).
    fn by_attribute(
        &self,
        scorer: &mut dyn Scorer,
        attrs: &mut SegmentAttrs,
    ) -> std::result::Result<Partial, ScanError> {
        let RangeScan {
            segment,
            task,
            request,
            work,
        } = self;
        let sources = work.caches.doc_sources(segment)?;
        let mut ranked = Ranked {
            sort: &request.sort,
            top: BinaryHeap::with_capacity(request.offset + request.limit + 1),
            k: request.offset + request.limit,
            after: request.after,
            counts: [0; MAX_SOURCES],
        };
        if scorer.doc() < task.range.start {
            scorer.seek(task.range.start);
        }
        let visited = by_attribute(
            scorer,
            task.range.end,
            segment.alive_bitset(),
            &sources,
            request.filter.source,
            attrs,
            work.columns,
            &mut ranked,
            work.budget,
        );
        work.visited(visited)?;
        work.failures.check()?;
        Ok(Partial {
            counts: task.known_total.unwrap_or(ranked.counts),
            facets: attrs.facet_values()?,
            top: ranked
                .top
                .into_iter()
                .map(|Reverse((r, doc))| (r, DocAddress::new(task.ord, doc)))
                .collect(),
        })
    }
}

/// Keeps `entry` if it is among the best `k` so far.
fn offer(top: &mut BinaryHeap<Reverse<(Rank, DocId)>>, k: usize, entry: (Rank, DocId)) {
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
