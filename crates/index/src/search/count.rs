//! Counting without visiting: a one-term query's matches in a range.
//!
//! A keyword of up to four characters is one term (see `query`), and what a
//! search reads of a segment is one source's run, or a time window of it:
//! a doc-id range (see `order`). A term's postings say how many documents
//! below a doc id hold it from their skip list and one block decode
//! (`BlockSegmentPostings::rank`), so the matches in a range are
//! `rank(end) - rank(start)`, less the deleted documents of the range that
//! hold the term, each found by a seek. For a character in most rows that
//! is a few dozen skip entries instead of a visit to every match.
//!
//! Lucene's `Weight#count` counts a term from its document frequency only
//! in a segment without deletions. An index that mirrors a live table always
//! has some, so deletions are subtracted here, and only when they are many
//! (see [`SEEKS_PER_MATCH`]) is visiting the matches cheaper.

use std::ops::Range;
use std::sync::Arc;

use tantivy::index::SegmentId;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, SegmentReader, Term};

use super::query::gram_field;
use super::request::Request;
use crate::schema::Fields;
use crate::Result;

/// The deleted doc ids of a segment, ascending, by segment and delete
/// count: a segment's deletions only grow, and each count has one list.
pub(crate) type DeletedDocs = moka::sync::Cache<(SegmentId, u32), Arc<[DocId]>>;

/// A deleted document in the range costs a seek, a match a visit: past one
/// deleted document per this many matches, visiting is cheaper.
const SEEKS_PER_MATCH: u64 = 16;

/// The term whose postings are exactly the request's matches before its
/// time and source bounds: one keyword of up to four characters, with no
/// synonym, no morpheme matching and no attribute filter.
pub(super) fn single_term(fields: &Fields, request: &Request) -> Option<Term> {
    let [keyword] = request.keywords.as_slice() else {
        return None;
    };
    if request.morph || !request.filter.attributes.is_empty() || request.forms(0).nth(1).is_some() {
        return None;
    }
    let field = gram_field(fields, keyword)?;
    Some(Term::from_field_text(field, keyword.as_str()))
}

/// The deleted doc ids of `segment`, ascending (empty when it has none).
pub(super) fn deleted_docs(cache: &DeletedDocs, segment: &SegmentReader) -> Arc<[DocId]> {
    let Some(alive) = segment.alive_bitset() else {
        return Arc::from([]);
    };
    cache.get_with((segment.segment_id(), segment.num_deleted_docs()), || {
        (0..segment.max_doc())
            .filter(|&doc| alive.is_deleted(doc))
            .collect()
    })
}

/// The alive documents of `range` that hold `term`, from the postings'
/// skip list; `None` when the range holds so many deleted documents that
/// visiting the matches is cheaper. `deleted` is the segment's
/// [`deleted_docs`].
pub(super) fn term_in_range(
    segment: &SegmentReader,
    term: &Term,
    range: Range<DocId>,
    deleted: &[DocId],
) -> Result<Option<u64>> {
    let inverted = segment.inverted_index(term.field())?;
    let Some(info) = inverted.get_term_info(term)? else {
        return Ok(Some(0));
    };
    let mut blocks = inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
    // `rank` only moves forward: the start first.
    let below_start = blocks.rank(range.start);
    let held = u64::from(blocks.rank(range.end) - below_start);
    let first = deleted.partition_point(|&doc| doc < range.start);
    let last = deleted.partition_point(|&doc| doc < range.end);
    let gone = &deleted[first..last];
    if gone.is_empty() {
        return Ok(Some(held));
    }
    if gone.len() as u64 > held / SEEKS_PER_MATCH {
        return Ok(None);
    }
    let mut postings = inverted.read_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
    let mut alive = held;
    for &doc in gone {
        if postings.doc() < doc {
            postings.seek(doc);
        }
        if postings.doc() == doc {
            alive -= 1;
        }
    }
    Ok(Some(alive))
}

#[cfg(test)]
mod tests {
    use chaja_core::model::{Doc, Key};
    use chaja_core::sources::SourceId;
    use tantivy::TERMINATED;

    use super::*;
    use crate::create_generation;

    /// 3,000 rows of two sources, `가` in four of every five; `deletes`
    /// of them deleted after the first commit.
    fn index(deletes: impl Fn(i64) -> bool) -> (tempfile::TempDir, crate::Generation) {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer_with_threads(32 << 20, 1).unwrap();
        let docs: Vec<Doc> = (0..3_000i64)
            .map(|i| Doc {
                source: SourceId::from_index((i % 2) as usize),
                key: Key::Int(i),
                title: None,
                body: vec![if i % 5 == 0 { "다라" } else { "가나" }.to_owned()],
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

    fn key(doc: &Doc) -> i64 {
        match doc.key {
            Key::Int(i) => i,
            Key::Str(_) => unreachable!(),
        }
    }

    /// The alive documents of `range` that hold `term`, one by one.
    fn visited(segment: &SegmentReader, term: &Term, range: Range<DocId>) -> u64 {
        let inverted = segment.inverted_index(term.field()).unwrap();
        let mut postings = inverted
            .read_postings(term, IndexRecordOption::Basic)
            .unwrap()
            .unwrap();
        let mut n = 0;
        while postings.doc() != TERMINATED {
            let doc = postings.doc();
            if range.contains(&doc) && !segment.is_deleted(doc) {
                n += 1;
            }
            postings.advance();
        }
        n
    }

    /// Every range of every run, and windows cut from them, counted from
    /// the postings equal the matches visited one by one; with a few
    /// deletions subtracted by seeks, with many left to visiting.
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
            let mut subtracted = 0;
            for segment in searcher.segment_readers() {
                let gone = deleted_docs(&generation.deleted, segment);
                assert_eq!(gone.len() as u32, segment.num_deleted_docs());
                let runs = crate::order::runs(segment).unwrap();
                assert_eq!(runs.len(), 2, "a run per source");
                for (_, run) in runs {
                    let len = run.end - run.start;
                    for cut in [0, 1, len / 7, len / 3, len / 2, len - 1] {
                        for range in [run.start + cut..run.end, run.start..run.end - cut] {
                            let want = visited(segment, &term, range.clone());
                            match term_in_range(segment, &term, range.clone(), &gone).unwrap() {
                                Some(n) => {
                                    assert_eq!(n, want, "{range:?}");
                                    if gone.iter().any(|d| range.contains(d)) {
                                        subtracted += 1;
                                    }
                                }
                                None => assert!(!few, "a few deletions are subtracted"),
                            }
                        }
                    }
                }
            }
            assert_eq!(subtracted > 0, few, "deletions subtracted: {subtracted}");
        }
    }

    /// A term no segment holds counts nothing.
    #[test]
    fn an_absent_term_counts_nothing() {
        let (_dir, generation) = index(|_| false);
        let searcher = generation.reader.searcher();
        let term = Term::from_field_text(generation.fields.chars, "없");
        for segment in searcher.segment_readers() {
            let found = term_in_range(segment, &term, 0..segment.max_doc(), &[]).unwrap();
            assert_eq!(found, Some(0));
        }
    }
}
