//! Query execution: exact substring matching, three orders, exact totals.
//!
//! Every keyword becomes a query that matches exactly the rows whose
//! normalized title or content contains it:
//! - 1 character: one term of `chars`;
//! - 2 characters: one term of `grams2`;
//! - 3 characters: one term of `grams3`, or for a rare trigram, which
//!   `grams3` holds only at the end of a text, that term or a 4-gram that
//!   starts with it (see `trigrams`);
//! - 4 characters: one term of `grams4` (or of `grams4_rare`, for a 4-gram
//!   the generation keeps no positions for: see `common_grams`);
//! - longer: a slop-0 phrase of the fewest 4-grams that pin every character,
//!   or, when some character is in no 4-gram with positions, the rows that
//!   hold all its 4-grams, checked against their stored text (see
//!   `checked`).
//!
//! So a keyword of up to 4 characters, the bulk of what people type, is
//! counted from one posting list with no position to check (a rare
//! trigram from the few postings of its 4-grams), and a longer one checks
//! positions only where its rare 4-grams all occur.
//!
//! The total is exact, and split by source. Each segment is a run of
//! documents per source, each run newest first (see `order`), so:
//! - the newest-first top-k of a run is final as soon as a match is older
//!   than the k-th best; the rest of the run is only counted;
//! - a one-term keyword's remaining matches are counted from its postings'
//!   skip list without visiting them (see `term_count`); any other query visits
//!   them, once per segment: the counts are kept per segment (see
//!   `Generation::totals`), so later queries only find their top-k;
//! - a source filter reads only that source's run, and a time filter
//!   (`from`, `to`) only a contiguous range of each run.
//!
//! A search alone on the machine scans its ranges in parallel; when other
//! searches keep every core busy, it scans them one after another on its
//! own thread (see [`Fanout`]). When a search that fans out has few
//! ranges to scan (one merged segment), large ones are cut in two halves
//! scanned in parallel (a scorer can `seek` to the middle), because a
//! core would otherwise sit idle.
//!
//! A search can be stopped: its [`Budget`] is checked at the start of
//! every scanned range and after every 4,096 matches the scorer yields, so
//! a request that timed out or whose client left stops using a core soon
//! after, instead of finishing a scan nobody reads. The scorer's own work
//! between two matches is not interrupted: a phrase of common grams that
//! rarely occur together can run on until its next match or the range's
//! end.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use tantivy::{DocAddress, DocId};

use chaja_core::sources::MAX_SOURCES;

use crate::attributes::{add_facets, top_facets, SegmentFacetValues};
use crate::{Generation, Result, View};

mod bits;
mod budget;
mod cached_keyword;
mod contains;
mod exact_rows;
mod fanout;
mod hit;
mod keyword_count;
mod patched;
mod plan;
mod query;
mod request;
mod scan;
mod scored_by_terms;
pub mod similar;
mod statistics;
mod term_count;
mod terms;

pub use crate::attributes::{AttrOrder, FacetCounts, NumberRange};
pub use crate::caches::SourceCounts;
pub use budget::{Budget, ScanError, StopOnDrop};
pub use fanout::Fanout;
pub use request::{Filter, Hit, Rank, Request, Response, SearchKey, Sort, DEFAULT_FACET_SIZE};
pub use term_count::counts_without_visiting;

use cached_keyword::CachedBits;
use hit::load_hit;
use plan::Plan;
use request::totals_key;
use scan::{time_window, windows, RangeScan, Task, Work};

/// Ranges with more documents than this are scanned as two halves, when
/// a search has fewer ranges than [`min_ranges`] (see [`Split`]).
const SPLIT_DOCS: u32 = 32_768;

/// Below this many ranges to scan, a search cuts its large ones in halves
/// (see [`halves`]): two per thread of the pool that scans them.
fn min_ranges() -> usize {
    2 * rayon::current_num_threads()
}

/// `tasks` with each range of more than `split_docs` documents cut in two
/// halves, scanned in parallel (a scorer can `seek` to the middle): one
/// merged segment would otherwise leave a core idle, and a known total
/// still leaves the top-k to find. Only for searches with few ranges:
/// with many, halves only add scorers to set up (at 1M rows in 9
/// segments they cost 7–11% of the throughput of never-seen queries under
/// load, and gained nothing for one client). The count ignores sizes: one
/// large segment beside many small ones is scanned by one thread.
/// Merges keep such a tail short-lived.
fn halves(tasks: Vec<Task>, split_docs: u32) -> Vec<Task> {
    let mut cut = Vec::with_capacity(2 * tasks.len());
    for task in tasks {
        let Range { start, end } = task.range;
        if end - start <= split_docs {
            cut.push(task);
            continue;
        }
        let middle = start + (end - start) / 2;
        // The first half keeps what the task carried of its segment's
        // known total; the second adds nothing to it.
        let second = Task {
            range: middle..end,
            known_total: task.known_total.map(|_| [0; MAX_SOURCES]),
            ..task
        };
        cut.push(Task {
            range: start..middle,
            ..task
        });
        cut.push(second);
    }
    cut
}

fn add_counts(sum: &mut SourceCounts, more: &SourceCounts) {
    for (s, m) in sum.iter_mut().zip(more) {
        *s += m;
    }
}

/// How a search's ranges are cut: those with more than `docs` documents
/// are scanned as two halves when a search has fewer than `below_ranges`
/// ranges to scan (see [`halves`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Split {
    docs: u32,
    below_ranges: usize,
}

impl Split {
    /// What a served search does.
    fn served() -> Split {
        Split {
            docs: SPLIT_DOCS,
            below_ranges: min_ranges(),
        }
    }
}

/// How one search runs, besides what it asks: when it stops, where its
/// scans run, and how its ranges are cut.
#[derive(Clone, Copy)]
struct Run<'a> {
    budget: &'a Budget,
    fanout: Fanout,
    split: Split,
}

impl Run<'_> {
    /// Alone and unbounded: what tests and tools ask.
    fn unbounded(split: Split) -> Run<'static> {
        static UNLIMITED: std::sync::OnceLock<Budget> = std::sync::OnceLock::new();
        Run {
            budget: UNLIMITED.get_or_init(Budget::unlimited),
            fanout: Fanout::Parallel,
            split,
        }
    }
}

/// Runs a search on one generation. Blocking: call it off the async workers.
pub fn search(generation: &Generation, request: &Request) -> Result<Response> {
    let view = generation.view();
    let plan = choose(generation, &view, request)?;
    let run = Run::unbounded(Split::served());
    unlimited(search_within(generation, &view, request, plan, run))
}

/// [`search`], cutting every range larger than `split_docs` in two halves,
/// however many there are; tests use a tiny value to exercise the split
/// on small indexes.
pub fn search_split(
    generation: &Generation,
    request: &Request,
    split_docs: u32,
) -> Result<Response> {
    let split = Split {
        docs: split_docs,
        below_ranges: usize::MAX,
    };
    let view = generation.view();
    let plan = choose(generation, &view, request)?;
    unlimited(search_within(
        generation,
        &view,
        request,
        plan,
        Run::unbounded(split),
    ))
}

/// [`search`] that scores the whole union under `match=morph`, as it did
/// before `exact_rows`: what the tests compare it with.
#[cfg(test)]
pub(crate) fn search_whole_union(generation: &Generation, request: &Request) -> Result<Response> {
    let view = generation.view();
    let plan = choose(generation, &view, request)?.whole_union();
    let run = Run::unbounded(Split::served());
    unlimited(search_within(generation, &view, request, plan, run))
}

fn unlimited(searched: std::result::Result<Response, ScanError>) -> Result<Response> {
    match searched {
        Ok(response) => Ok(response),
        Err(ScanError::Index(e)) => Err(e),
        Err(ScanError::Stopped) => unreachable!("an unlimited budget never runs out"),
    }
}

/// [`search`], stopping when `budget` runs out, its tasks run as `fanout`
/// says. Blocking.
pub fn search_budgeted(
    generation: &Generation,
    request: &Request,
    budget: &Budget,
    fanout: Fanout,
) -> std::result::Result<Response, ScanError> {
    search_view(generation, &generation.view(), request, budget, fanout)
}

/// [`search_budgeted`] on `view`, a view of `generation` taken earlier:
/// every page of a cursor walk reads the view its first page read, so that
/// no row moves across the cursor between pages. Blocking.
pub fn search_view(
    generation: &Generation,
    view: &View,
    request: &Request,
    budget: &Budget,
    fanout: Fanout,
) -> std::result::Result<Response, ScanError> {
    budget.check()?;
    let plan = choose(generation, view, request)?;
    let run = Run {
        budget,
        fanout,
        split: Split::served(),
    };
    search_within(generation, view, request, plan, run)
}

/// The plan of `request` on `view`: its query reads the view's patches,
/// so the search must read the same view.
fn choose(generation: &Generation, view: &View, request: &Request) -> Result<Plan> {
    Plan::choose(
        &generation.fields,
        request,
        &view.searcher,
        &view.patches,
        &cached_bits(generation, view),
    )
}

/// Where long keywords' kept bitsets are, for the view's segments.
fn cached_bits(generation: &Generation, view: &View) -> CachedBits {
    let runs = view
        .searcher
        .segment_readers()
        .iter()
        .zip(view.columns.iter())
        .map(|(segment, columns)| {
            let runs = columns.runs.iter().map(|(_, run)| run.clone()).collect();
            (segment.segment_id(), runs)
        })
        .collect();
    CachedBits::new(&generation.caches.term_bits, runs)
}

/// A search on `view` of `generation`, following `plan`.
fn search_within(
    generation: &Generation,
    view: &View,
    request: &Request,
    plan: Plan,
    run: Run,
) -> std::result::Result<Response, ScanError> {
    let Run {
        budget,
        fanout,
        split,
    } = run;
    budget.check()?;
    debug_assert!(!request.keywords.is_empty());
    let searcher = &view.searcher;
    let patches = &view.patches;
    let caches = &generation.caches;
    let weight = plan.weight(request, view)?;

    // Segments never change but for deletes, so a segment's total for a
    // query stays true until its delete count moves: a frequent phrase is
    // counted once per segment, and after a commit only new segments are.
    // A total that reads attributes also holds until the segment's patches
    // move (see `patches`).
    let counts_key: Arc<str> = totals_key(request).into();
    let reads_attributes = request.filter.reads_attributes();
    // Facet counts are kept per segment the same way, under the query and
    // the facets' names.
    let facets_query: Arc<str> = format!("{counts_key}|{}", request.facets.join(",")).into();
    let mut tasks: Vec<Task> = Vec::new();
    let mut keys = Vec::new();
    let mut known_facets: Vec<Option<Arc<SegmentFacetValues>>> = Vec::new();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let ord = ord as u32;
        let stamp = patches
            .segment(segment.segment_id())
            .map_or(0, |patched| patched.stamp);
        let key = (
            segment.segment_id(),
            segment.num_deleted_docs(),
            if reads_attributes { stamp } else { 0 },
            counts_key.clone(),
        );
        let known_total = caches.totals.get(&key);
        let facets_key = (
            segment.segment_id(),
            segment.num_deleted_docs(),
            stamp,
            facets_query.clone(),
        );
        let facets_here = match request.facets.is_empty() {
            true => None,
            false => caches.facets.get(&facets_key),
        };
        let count_facets = !request.facets.is_empty() && facets_here.is_none();
        known_facets.push(facets_here);
        keys.push((key, facets_key, known_total.is_some()));
        // A newest-first cursor page with its totals known needs only the
        // matches from the cursor on: every one before it ranks above the
        // cursor, and a run is sorted newest first. So a deep page costs its
        // own size, not its depth. Facets still to count need every match,
        // not only those after it.
        let columns = &view.columns[ord as usize];
        let from_cursor = match (request.after, known_total, &request.sort, count_facets) {
            (Some(after), Some(_), Sort::Recent, false) => Some(after.1),
            _ => None,
        };
        let mut ranges: Vec<(usize, Range<DocId>)> = Vec::new();
        for (source, mut window) in windows(columns, &request.filter) {
            if let Some(at) = from_cursor {
                window = time_window(&columns.created, window, None, Some(at));
            }
            ranges.push((source, window));
        }
        // A segment with nothing to read still gets one (empty) task, so
        // that its zero total is kept like any other.
        if ranges.is_empty() {
            ranges.push((0, 0..0));
        }
        // The first task of a segment carries its known total, the others
        // add nothing to it.
        for (i, (source, range)) in ranges.into_iter().enumerate() {
            tasks.push(Task {
                ord,
                source,
                range,
                known_total: match i {
                    0 => known_total,
                    _ => known_total.map(|_| [0; MAX_SOURCES]),
                },
                count_facets,
            });
        }
    }
    // Empty tasks (a segment of patches, or outside a time window) read
    // nothing and keep no thread busy.
    // On one thread, halves would only add scorers to set up.
    if fanout == Fanout::Parallel
        && tasks.iter().filter(|t| !t.range.is_empty()).count() < split.below_ranges
    {
        tasks = halves(tasks, split.docs);
    }
    let work = |task: &Task| Work {
        columns: &view.columns[task.ord as usize],
        budget,
        caches,
        patches,
        count: &plan.count,
        failures: &plan.failures,
    };
    // `match=morph` under relevance: the exact rows first, and the whole
    // union only when they do not fill the page (see `exact_rows`).
    let mut exact_partials = None;
    if let Some(exact) = &plan.exact_rows {
        let weight = exact.weight(view)?;
        let found = fanout.each(&tasks, |task| {
            let range_scan = RangeScan::new(searcher, task, request, work(task));
            exact_rows::scan(&range_scan, &*weight, exact)
        })?;
        let k = (request.offset + request.limit) as u64;
        if found.iter().map(|(_, eligible)| eligible).sum::<u64>() >= k {
            exact_partials = Some(found.into_iter().map(|(partial, _)| partial).collect());
        }
    }
    let partials = match exact_partials {
        Some(partials) => partials,
        None => fanout.each(&tasks, |task| {
            RangeScan::new(searcher, task, request, work(task)).scan(&*weight)
        })?,
    };
    budget.check()?;
    let mut segment_totals = vec![[0u64; MAX_SOURCES]; keys.len()];
    let mut segment_facets: Vec<Vec<HashMap<String, u64>>> =
        vec![vec![HashMap::new(); request.facets.len()]; keys.len()];
    for (task, partial) in tasks.iter().zip(&partials) {
        add_counts(&mut segment_totals[task.ord as usize], &partial.counts);
        if task.count_facets {
            add_facets(&mut segment_facets[task.ord as usize], &partial.facets);
        }
    }
    let mut facet_sums: Vec<HashMap<String, u64>> = vec![HashMap::new(); request.facets.len()];
    for (((key, facets_key, known), counts), (known_here, counted)) in keys
        .into_iter()
        .zip(segment_totals)
        .zip(known_facets.into_iter().zip(segment_facets))
    {
        if request.facets.is_empty() {
            // Nothing to count.
        } else if let Some(values) = known_here {
            add_facets(&mut facet_sums, &values);
        } else {
            let values: SegmentFacetValues = counted
                .into_iter()
                .map(|m| m.into_iter().collect())
                .collect();
            add_facets(&mut facet_sums, &values);
            caches.facets.insert(facets_key, Arc::new(values));
        }
        if !known {
            caches.totals.insert(key, counts);
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
        .map(|(rank, address)| load_hit(view, &generation.fields, &highlighted, rank, address))
        .collect::<Result<Vec<Hit>>>()?;
    Ok(Response {
        total: by_source.iter().sum(),
        by_source,
        hits,
        facets: top_facets(&request.facets, facet_sums, request.facet_size),
    })
}
