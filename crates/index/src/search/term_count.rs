//! Counting without visiting: the matches in a range of keywords that are
//! one term each.
//!
//! A keyword of up to four characters is one term (see `query`; but for a
//! rare trigram, whose few matches are visited), and what a
//! search reads of a segment is one source's run, or a time window of it:
//! a doc-id range (see `order`).
//! - **One term.** Its postings say how many documents below a doc id hold
//!   it from their skip list and one block decode
//!   (`BlockSegmentPostings::rank`), so its matches in a range are
//!   `rank(end) - rank(start)`, less the deleted documents of the range
//!   that hold it, each found by a seek. For a character in most rows that
//!   is a few dozen skip entries instead of a visit to every match.
//! - **Several terms, each in many rows of the range** (two common words).
//!   Each term's blocks are decoded into a bitset of the range, the bitsets
//!   are ANDed and the deleted documents cleared, and the bits counted:
//!   about a nanosecond a posting, where an intersection that seeks from
//!   match to match costs ten or more. A term's bitset of its whole
//!   segment is kept (weighed, 128 MiB at most), so the next query that
//!   holds the term reads a word per 64 documents instead. When one term
//!   is rare, the intersection led by it visits few documents, and is left
//!   to do so.
//!
//! Lucene's `Weight#count` counts a term from its document frequency only
//! in a segment without deletions, and ANDs dense conjunctions in bitset
//! windows; tantivy's `Intersection::count` does the same over a whole
//! segment. Here the range is a part of a segment, and an index that
//! mirrors a live table always has some deletions, so they are subtracted.

use std::ops::Range;
use std::sync::Arc;

use tantivy::index::InvertedIndexReader;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, SegmentReader, Term};

use super::bits::{alive_in, fill, DENSE_RATIO};
use super::request::{plain_and, Filter, Request};
use super::terms::gram_field;
use crate::caches::TermBits;
use crate::schema::Fields;
use crate::Result;

/// A deleted document in the range costs a seek, a match a visit: past one
/// deleted document per this many matches, visiting is cheaper.
const SEEKS_PER_MATCH: u64 = 16;

/// The terms whose postings' intersection is exactly the request's matches
/// before its time and source bounds: every keyword of up to four
/// characters, with no synonym, no morpheme matching and no attribute
/// filter.
pub(super) fn terms(fields: &Fields, request: &Request) -> Option<Vec<Term>> {
    if !plain_and(request) {
        return None;
    }
    request
        .keywords
        .iter()
        .map(|keyword| {
            Some(Term::from_field_text(
                gram_field(fields, keyword)?,
                keyword.as_str(),
            ))
        })
        .collect()
}

/// Whether a newest-first request's totals, in any time window, are
/// counted from its postings rather than by visiting its matches: one
/// keyword of up to four characters and nothing that reads attributes.
/// (An AND of short keywords is too when they are common, which only the
/// segments tell. A range with more than one deleted document per 16 of
/// the term's postings is visited instead, until a merge drops them: this
/// says what a request usually costs, for scheduling, not a bound.)
pub fn counts_without_visiting(request: &Request) -> bool {
    // The source and the time bounds are ranges, which the postings count;
    // attribute filters and ranges read columns per match.
    let Filter {
        source: _,
        attributes,
        from: _,
        to: _,
        ranges,
    } = &request.filter;
    matches!(request.keywords.as_slice(), [keyword] if keyword.char_len() <= 4)
        && request.forms(0).nth(1).is_none()
        && !request.morph
        && attributes.is_empty()
        && ranges.is_empty()
        && request.facets.is_empty()
}

/// The alive documents of `range` that hold every term, from the postings;
/// `None` when visiting the matches is cheaper (see the module doc).
/// `deleted` is the segment's [`deleted_docs`]; `bits` keeps the bitsets
/// of terms ANDed.
pub(super) fn in_range(
    segment: &SegmentReader,
    terms: &[Term],
    range: Range<DocId>,
    deleted: &[DocId],
    bits: &TermBits,
) -> Result<Option<u64>> {
    let first = deleted.partition_point(|&doc| doc < range.start);
    let last = deleted.partition_point(|&doc| doc < range.end);
    let gone = &deleted[first..last];
    // Each term's postings and its documents in the range, rarest first.
    let mut postings = Vec::with_capacity(terms.len());
    for term in terms {
        let inverted = segment.inverted_index(term.field())?;
        let Some(info) = inverted.get_term_info(term)? else {
            return Ok(Some(0));
        };
        let mut blocks =
            inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
        // `rank` only moves forward: the start first.
        let below_start = blocks.rank(range.start);
        let held = u64::from(blocks.rank(range.end) - below_start);
        postings.push((held, inverted, info, term));
    }
    postings.sort_by_key(|(held, _, _, _)| *held);
    let [(held, inverted, info, _)] = postings.as_slice() else {
        let Some(&(rarest, _, _, _)) = postings.first() else {
            return Ok(None);
        };
        if rarest == 0 {
            return Ok(Some(0));
        }
        if rarest * DENSE_RATIO < u64::from(range.end - range.start) {
            return Ok(None);
        }
        let terms: Vec<_> = postings
            .iter()
            .map(|(_, inverted, info, term)| (&**inverted, info, *term))
            .collect();
        return anded(segment, &terms, range, gone, bits).map(Some);
    };
    if gone.is_empty() {
        return Ok(Some(*held));
    }
    if gone.len() as u64 > held / SEEKS_PER_MATCH {
        return Ok(None);
    }
    let mut docs = inverted.read_postings_from_terminfo(info, IndexRecordOption::Basic)?;
    let mut alive = *held;
    for &doc in gone {
        if docs.doc() < doc {
            docs.seek(doc);
        }
        if docs.doc() == doc {
            alive -= 1;
        }
    }
    Ok(Some(alive))
}

/// The alive documents of `range` in every term's postings, by bitsets:
/// one bit a document, 8 KB per 65,536 documents.
///
/// A term's bitset of its whole segment is kept in `bits` (as Lucene's
/// query cache keeps a segment's bitset of a frequent filter): the common
/// short keywords that reach here recur in queries that are otherwise
/// new, and a kept bitset is read a word per 64 documents where its
/// postings cost a decode and a bit per document. A segment's postings
/// never change, so neither does its bitset; its deletions are cleared
/// here, per search.
fn anded(
    segment: &SegmentReader,
    terms: &[(&InvertedIndexReader, &tantivy::postings::TermInfo, &Term)],
    range: Range<DocId>,
    gone: &[DocId],
    bits: &TermBits,
) -> Result<u64> {
    if range.is_empty() {
        return Ok(0);
    }
    let (first, last) = ((range.start / 64) as usize, range.end.div_ceil(64) as usize);
    let max_doc = segment.max_doc();
    // A range of a quarter of its segment or more pays for the whole
    // segment's bitset; a smaller one (a time window) decodes itself only.
    let keep = u64::from(range.end - range.start) * 4 >= u64::from(max_doc);
    let mut all = vec![!0u64; last - first];
    let mut one = Vec::new();
    for &(inverted, info, term) in terms {
        let key = (segment.segment_id(), 0..max_doc, term.clone());
        let postings =
            || inverted.read_block_postings_from_terminfo(info, IndexRecordOption::Basic);
        let held = match bits.get(&key) {
            Some(held) => Some(held),
            None if keep => {
                // Two searches may both build it: the same bits, twice.
                let mut whole = vec![0u64; max_doc.div_ceil(64) as usize];
                fill(&mut postings()?, &(0..max_doc), &mut whole);
                let whole: Arc<[u64]> = whole.into();
                bits.insert(key, whole.clone());
                Some(whole)
            }
            None => None,
        };
        let words: &[u64] = match &held {
            Some(held) => &held[first..last],
            None => {
                one.clear();
                one.resize(last - first, 0);
                let words = first as DocId * 64..(last as DocId * 64).min(max_doc);
                fill(&mut postings()?, &words, &mut one);
                &one
            }
        };
        for (a, w) in all.iter_mut().zip(words) {
            *a &= w;
        }
    }
    Ok(alive_in(all, &range, gone))
}

#[cfg(test)]
mod tests {
    use chaja_core::model::{Doc, Key};
    use chaja_core::sources::SourceId;
    use tantivy::TERMINATED;

    use super::*;
    use crate::create_generation;
    use crate::search::bits::deleted_docs;
    use crate::tests::int_key as key;

    /// 3,000 rows of two sources, `가` in four of every five, `마` in two
    /// of every three; `deletes` of them deleted after the first commit.
    fn index(deletes: impl Fn(i64) -> bool) -> (tempfile::TempDir, crate::Generation) {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer_with_threads(32 << 20, 1).unwrap();
        let docs: Vec<Doc> = (0..3_000i64)
            .map(|i| Doc {
                source: SourceId::from_index((i % 2) as usize),
                key: Key::Int(i),
                title: None,
                body: vec![format!(
                    "{} {}",
                    if i % 5 == 0 { "다라" } else { "가나" },
                    if i % 3 == 0 { "" } else { "마" }
                )],
                created_at: i * 7 % 1_000,
                attributes: Vec::new(),
            })
            .collect();
        for doc in &docs {
            writer.upsert(doc).unwrap();
        }
        writer.commit(1).unwrap();
        for doc in docs.iter().filter(|d| deletes(key(d))) {
            writer.delete(doc.source, &doc.key.text());
        }
        writer.commit(2).unwrap();
        generation.reload().unwrap();
        (dir, generation)
    }

    /// The alive documents of `range` that hold every term, one by one.
    fn visited(segment: &SegmentReader, terms: &[Term], range: Range<DocId>) -> u64 {
        let holders = |term: &Term| {
            let inverted = segment.inverted_index(term.field()).unwrap();
            let mut postings = inverted
                .read_postings(term, IndexRecordOption::Basic)
                .unwrap()
                .unwrap();
            let mut docs = std::collections::HashSet::new();
            while postings.doc() != TERMINATED {
                docs.insert(postings.doc());
                postings.advance();
            }
            docs
        };
        let sets: Vec<_> = terms.iter().map(holders).collect();
        range
            .filter(|doc| !segment.is_deleted(*doc) && sets.iter().all(|s| s.contains(doc)))
            .count() as u64
    }

    /// Every range of every run, and windows cut from them, counted from
    /// the postings equal the matches visited one by one: one term with a
    /// few deletions subtracted by seeks, with many left to visiting; two
    /// terms ANDed in bitsets, deletions cleared.
    #[test]
    fn counts_from_the_postings_equal_the_visited_matches() {
        for (deletes, few) in [
            (
                Box::new(|i: i64| i % 97 == 3) as Box<dyn Fn(i64) -> bool>,
                true,
            ),
            (Box::new(|i: i64| i % 3 == 0), false),
        ] {
            let (_dir, generation) = index(deletes);
            let searcher = generation.reader.searcher();
            let term = Term::from_field_text(generation.fields.chars, "가");
            let both = [
                term.clone(),
                Term::from_field_text(generation.fields.chars, "마"),
            ];
            let mut subtracted = 0;
            let mut anded = 0;
            for segment in searcher.segment_readers() {
                let gone = deleted_docs(&generation.caches.deleted, segment);
                assert_eq!(gone.len() as u32, segment.num_deleted_docs());
                let runs = crate::order::runs(segment).unwrap();
                assert_eq!(runs.len(), 2, "a run per source");
                for (_, run) in runs {
                    let len = run.end - run.start;
                    for cut in [0, 1, len / 7, len / 3, len / 2, len - 1] {
                        for range in [run.start + cut..run.end, run.start..run.end - cut] {
                            let want = visited(segment, std::slice::from_ref(&term), range.clone());
                            match in_range(
                                segment,
                                std::slice::from_ref(&term),
                                range.clone(),
                                &gone,
                                &generation.caches.term_bits,
                            )
                            .unwrap()
                            {
                                Some(n) => {
                                    assert_eq!(n, want, "{range:?}");
                                    if gone.iter().any(|d| range.contains(d)) {
                                        subtracted += 1;
                                    }
                                }
                                None => assert!(!few, "a few deletions are subtracted"),
                            }
                            let want = visited(segment, &both, range.clone());
                            let got = in_range(
                                segment,
                                &both,
                                range.clone(),
                                &gone,
                                &generation.caches.term_bits,
                            )
                            .unwrap();
                            assert_eq!(got, Some(want), "{range:?}: both terms are dense");
                            // With nothing kept yet: a small range decodes
                            // itself only.
                            let fresh = TermBits::new(1);
                            let got = in_range(segment, &both, range.clone(), &gone, &fresh);
                            assert_eq!(got.unwrap(), Some(want), "{range:?}: nothing kept");
                            anded += u64::from(gone.iter().any(|d| range.contains(d)));
                        }
                    }
                }
            }
            assert_eq!(subtracted > 0, few, "deletions subtracted: {subtracted}");
            assert!(anded > 0, "no AND had deletions to clear");
            // Each segment's two terms were decoded once and kept: the
            // ranges after the first read their bitsets.
            generation.caches.term_bits.run_pending_tasks();
            let segments = searcher.segment_readers().len() as u64;
            assert_eq!(generation.caches.term_bits.entry_count(), 2 * segments);
        }
    }

    /// A search for two common keywords, and for one, newest first: its
    /// totals by source are the rows' (it stops collecting at the page and
    /// counts the rest from the postings).
    #[test]
    fn searches_count_common_keywords_by_source() {
        let deleted = |i: i64| i % 97 == 3;
        let (_dir, generation) = index(deleted);
        for (q, holds) in [
            (
                "가 마",
                (|i: i64| i % 5 != 0 && i % 3 != 0) as fn(i64) -> bool,
            ),
            ("가", |i: i64| i % 5 != 0),
        ] {
            let mut want = [0u64; 2];
            for i in (0..3_000i64).filter(|&i| holds(i) && !deleted(i)) {
                want[(i % 2) as usize] += 1;
            }
            let keywords = chaja_core::text::parse_query(q);
            let request = crate::search::Request::newest_first(keywords, 3);
            let found = crate::search::search(&generation, &request).unwrap();
            assert_eq!(&found.by_source[..2], &want[..], "{q}");
            assert_eq!(found.hits.len(), 3);
        }
    }

    /// A term no segment holds counts nothing.
    #[test]
    fn an_absent_term_counts_nothing() {
        let (_dir, generation) = index(|_| false);
        let searcher = generation.reader.searcher();
        let term = Term::from_field_text(generation.fields.chars, "없");
        for segment in searcher.segment_readers() {
            let found = in_range(
                segment,
                std::slice::from_ref(&term),
                0..segment.max_doc(),
                &[],
                &generation.caches.term_bits,
            )
            .unwrap();
            assert_eq!(found, Some(0));
        }
    }
}
