//! `sort=relevance&match=morph` when the exact rows fill the page.
//!
//! Under `match=morph` a row matches when it holds every keyword as typed
//! (the exact rows) or every morpheme of them. An exact row scores
//! `EXACT_TIER` plus its morphemes' BM25, more than any row that only holds
//! the morphemes can (see `query`). So when at least a page of exact rows
//! ranks below the cursor, the page holds exact rows only, and only they
//! need a score. Two common words hold their morphemes in most rows (`있는
//! 없기`: 705,160 of 1M), while far fewer hold both words as typed, and
//! scoring every row of the union was the slowest of the first queries.
//!
//! The total is still the union's, by source: the rows that hold every
//! morpheme, counted from the morphemes' postings as bitsets (see
//! `term_count::term_words`, which keeps a common term's), plus the exact rows
//! outside them, which the scoring visits anyway. When the exact rows fall
//! short of a page, the search scores the whole union as before; what was
//! done here is then lost, and it is a part of what the union's scan reads.

use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, Weight};
use tantivy::{DocId, Term};

use super::bits::{alive_in, deleted_docs, term_words};
use super::budget::ScanError;
use super::query::{morph_query, substring_query, Shared, EXACT_TIER};
use super::request::{plain_keywords, Filter, Request, Sort};
use super::scan::{Partial, RangeScan, Task, TopK};
use super::statistics::RowStatistics;
use super::terms::{morpheme_fields, morphemes};
use crate::caches::SourceCounts;
use crate::schema::Fields;
use crate::View;
use chaja_core::sources::MAX_SOURCES;

/// What the exact rows' scan reads: the query and the morphemes' terms.
pub(super) struct ExactRows {
    pub(super) query: Box<dyn Query>,
    /// Each morpheme's title and content terms.
    pub(super) morphemes: Vec<[Term; 2]>,
}

/// The query whose matches are the exact rows, each scored as
/// `query::build_query`'s union scores it (`EXACT_TIER`, plus the
/// morphemes' BM25 where the row holds every morpheme: tantivy adds the
/// same two scores in a union and in a required-optional pair), and the
/// morphemes' title and content terms. `None` unless the request is
/// `match=morph` under relevance, with morphemes, over keywords as typed,
/// with no attribute filter, range or facet (those read columns per row,
/// which the union's bitsets do not).
pub(super) fn query(fields: &Fields, request: &Request, shared: Shared) -> Option<ExactRows> {
    // The source and the time bounds are ranges the scan reads; attribute
    // filters and ranges read columns per row, which the union's bitsets
    // do not.
    let Filter {
        source: _,
        attributes,
        from: _,
        to: _,
        ranges,
    } = &request.filter;
    if request.sort != Sort::Relevance
        || !request.morph
        || !plain_keywords(request)
        || !attributes.is_empty()
        || !ranges.is_empty()
        || !request.facets.is_empty()
    {
        return None;
    }
    let morphemes = morphemes(request);
    if morphemes.is_empty() {
        return None;
    }
    let exact = substring_query(fields, request, false, shared);
    let query = BooleanQuery::new(vec![
        (
            Occur::Must,
            Box::new(ConstScoreQuery::new(exact, EXACT_TIER)) as Box<dyn Query>,
        ),
        (Occur::Should, morph_query(fields, &morphemes, Occur::Must)),
    ]);
    Some(ExactRows {
        query: Box::new(query),
        morphemes: morpheme_fields(fields, &morphemes),
    })
}

impl ExactRows {
    /// The query's weight on `view`, scored over its rows (see
    /// `statistics`).
    pub(super) fn weight(&self, view: &View) -> crate::Result<Box<dyn Weight>> {
        let statistics = RowStatistics::of(view);
        Ok(self.query.weight(statistics.scoring())?)
    }
}

/// Scans a task's range with `weight`, the exact rows scored as the union
/// scores them (see [`query`]): the best k of those that rank below the
/// cursor, how many rank below it, and the range's union total (or its
/// known one).
pub(super) fn scan(
    range_scan: &RangeScan,
    weight: &dyn Weight,
    exact: &ExactRows,
) -> Result<(Partial, u64), ScanError> {
    let RangeScan {
        segment,
        task,
        request,
        work,
    } = range_scan;
    let Task {
        ord,
        source,
        ref range,
        known_total,
        count_facets: _,
    } = **task;
    work.budget.check()?;
    // The rows that hold every morpheme, as the words of the range, when
    // the total is to be counted.
    let first = (range.start / 64) as usize;
    let every = match known_total.is_none() && !range.is_empty() {
        true => {
            let words = first..range.end.div_ceil(64) as usize;
            // A common term's bitset of its whole segment is kept when the
            // range is a quarter of the segment or more (`keyword_count`
            // asks a quarter of the run), so that later searches read it.
            let keep = u64::from(range.end - range.start) * 4 >= u64::from(segment.max_doc());
            let bits = &work.caches.term_bits;
            let mut every = vec![!0u64; words.len()];
            for [title, content] in &exact.morphemes {
                let title = term_words(segment, title, words.clone(), keep, bits)?;
                let content = term_words(segment, content, words.clone(), keep, bits)?;
                for ((e, t), c) in every.iter_mut().zip(title).zip(content) {
                    *e &= t | c;
                }
            }
            Some(every)
        }
        false => None,
    };
    let mut scorer = weight.scorer(segment, 1.0)?;
    let mut attrs = range_scan.attrs()?;
    let mut top = TopK::new(request);
    // Exact rows outside `every`.
    let mut outside = 0u64;
    range_scan.collect(&mut *scorer, &mut attrs, &mut top, |doc, _| {
        if let Some(every) = &every {
            let bit = doc - first as DocId * 64;
            if every[(bit / 64) as usize] & (1 << (bit % 64)) == 0 {
                outside += 1;
            }
        }
    })?;
    let counts = match (known_total, every) {
        (Some(known), _) => known,
        (None, None) => [0; MAX_SOURCES],
        (None, Some(every)) => {
            let gone = deleted_docs(&work.caches.deleted, segment);
            let from = gone.partition_point(|&d| d < range.start);
            let to = gone.partition_point(|&d| d < range.end);
            let mut counts: SourceCounts = [0; MAX_SOURCES];
            counts[source] = alive_in(every, range, &gone[from..to]) + outside;
            counts
        }
    };
    work.failures.check()?;
    let eligible = top.eligible;
    let partial = Partial {
        counts,
        facets: Vec::new(),
        top: top.into_hits(ord),
    };
    Ok((partial, eligible))
}

#[cfg(test)]
mod tests {

    use chaja_core::text::parse_query;

    use crate::search::keyword_count::tests::{index, under_each_filter};
    use crate::search::{search, search_whole_union, Request, Sort};

    /// Relevance with `match=morph` answers as when the whole union was
    /// scored: the same hits, ranks and totals by source, on pages of 1 to
    /// 500 rows, one of them at an offset, on a second page from the first
    /// one's cursor, under a source filter and a time window; and for a
    /// query with no exact row or with fewer than a page of them, where the
    /// union has to be scored. At least one page visits fewer rows than
    /// the union's scan, so the exact rows' path is the one that answered.
    #[test]
    fn exact_rows_first_answer_as_the_whole_union() {
        let (_dir, generation, _docs) = index();
        let mut fewer = 0;
        for q in [
            "있습니다.",
            "설정합니다 서버를",
            "가나다라마 설정합니다 있습니다.",
            "있습니다. 드문말입니다",
            "드문말입니다",
            "서버를 배포",
            // As typed, inside the word 서버를, so the exact rows do not
            // hold its morpheme (a word, without the dictionary): they are
            // counted outside the morphemes' rows.
            "서버",
            "서버 배포",
            // In no row as typed, but its morpheme is.
            "있습니다!",
        ] {
            for limit in [1, 5, 40, 500] {
                let mut unfiltered = Request::newest_first(parse_query(q), limit);
                // A page further in by offset, too: the page is the exact
                // rows' only when offset + limit of them rank.
                unfiltered.offset = if limit == 5 { 10 } else { 0 };
                unfiltered.sort = Sort::Relevance;
                unfiltered.morph = true;
                unfiltered.now = 1_000;
                for mut request in under_each_filter(&unfiltered) {
                    let what = format!("{q} limit {limit} {:?}", request.filter);
                    let answer = |request: &Request, whole: bool| {
                        generation.caches.totals.invalidate_all();
                        let before = generation.scanned();
                        let found = match whole {
                            true => search_whole_union(&generation, request),
                            false => search(&generation, request),
                        };
                        let scanned = generation.scanned() - before;
                        (found.unwrap(), scanned)
                    };
                    let (found, scanned) = answer(&request, false);
                    let (want, union_scanned) = answer(&request, true);
                    assert_eq!(found, want, "{what}");
                    if scanned < union_scanned {
                        fewer += 1;
                    }
                    // The next page, from the last hit's cursor.
                    if let Some(last) = found.hits.last() {
                        request.after = Some(last.rank);
                        let (found, _) = answer(&request, false);
                        let (want, _) = answer(&request, true);
                        assert_eq!(found, want, "{what}, second page");
                    }
                }
            }
        }
        assert!(fewer > 0, "no page was found among the exact rows alone");
    }
}
