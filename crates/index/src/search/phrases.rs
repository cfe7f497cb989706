//! Counting the matches of long keywords from their 4-grams' postings
//! and positions, without a scorer.
//!
//! A keyword of five or more characters is a phrase of 4-grams at fixed
//! offsets (see `query`), and once a range's top-k is final its remaining
//! matches are only counted. tantivy's phrase scorer reads a candidate's
//! positions through `Postings::positions`, which finds where the
//! document's positions start by summing the frequencies of the documents
//! before it in its block, on every call: for a candidate late in a block
//! that is a hundred additions. Under never-seen queries at 1M rows that
//! was 14% of the server's samples (BENCHMARKS.md, 2026-12-05, night).
//!
//! Here the offset is a running sum: each 4-gram's postings are read block
//! by block from the first, one addition per document passed, and each
//! candidate's positions are read with tantivy's `PositionReader` at that
//! offset. A count needs only whether the phrase occurs once in a row, not
//! how often, so the check stops as soon as one start lines up for every
//! 4-gram. A keyword of up to four characters in the same AND is one term,
//! moved forward by its skip list as the scorer would.
//!
//! Reading from the first block decodes every block before the range, and
//! every block of a common 4-gram, where a scorer skips them. So this runs
//! only when no 4-gram has more than [`DECODE_RATIO`] times as many
//! documents in the segment as the rarest term has in the range: decoding
//! a document is about a nanosecond, checking a candidate's positions a
//! hundred or more.

use std::ops::Range;

use tantivy::directory::{CompositeFile, FileSlice};
use tantivy::index::SegmentComponent;
use tantivy::positions::PositionReader;
use tantivy::postings::BlockSegmentPostings;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, SegmentReader, TERMINATED};

use super::budget::{Budget, BUDGET_EVERY_MATCHES};
use super::query::Clause;
use crate::Result;

/// A 4-gram's postings are decoded from the first block only when it is in
/// at most this many documents of the segment per document of the range
/// that holds the rarest term (see the module doc).
const DECODE_RATIO: u64 = 64;

/// Below this many documents a 4-gram is decoded whatever the ratio: a few
/// microseconds.
const DECODE_ALWAYS: u64 = 4096;

/// The alive documents of `range` that match every clause, read from the
/// postings and positions; `None` when the scorer would read less (see the
/// module doc) or the budget ran out.
pub(super) fn count(
    segment: &SegmentReader,
    clauses: &[Clause],
    range: Range<DocId>,
    budget: &Budget,
) -> Result<Option<u64>> {
    if range.is_empty() {
        return Ok(Some(0));
    }
    let mut cursors = Vec::with_capacity(clauses.len());
    // The term with the fewest documents in the range: (clause, term,
    // documents).
    let mut lead: Option<(usize, usize, u64)> = None;
    let mut decoded: Vec<u64> = Vec::new();
    // The positions of the phrases' field, opened at its first 4-gram.
    let mut positions_file: Option<(tantivy::schema::Field, FileSlice)> = None;
    for (c, clause) in clauses.iter().enumerate() {
        let terms: Vec<(u32, &tantivy::Term)> = match clause {
            Clause::Term(term) => vec![(0, term)],
            Clause::Phrase(grams) => grams.iter().map(|(at, t)| (*at, t)).collect(),
        };
        let mut positioned = Vec::with_capacity(terms.len());
        for (t, (shift, term)) in terms.into_iter().enumerate() {
            let inverted = segment.inverted_index(term.field())?;
            let Some(info) = inverted.get_term_info(term)? else {
                return Ok(Some(0));
            };
            let mut ranks =
                inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
            let below = ranks.rank(range.start);
            let held = u64::from(ranks.rank(range.end) - below);
            if held == 0 {
                return Ok(Some(0));
            }
            if lead.is_none_or(|(_, _, fewest)| held < fewest) {
                lead = Some((c, t, held));
            }
            match clause {
                Clause::Term(_) => {
                    let blocks = inverted
                        .read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
                    cursors.push(Cursor::Docs(Box::new(Docs { blocks, at: 0 })));
                }
                Clause::Phrase(_) => {
                    decoded.push(u64::from(info.doc_freq));
                    let blocks = inverted
                        .read_block_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
                    let file = match &positions_file {
                        Some((field, file)) if *field == term.field() => file.clone(),
                        _ => {
                            let file = positions_file_of(segment, term.field())?;
                            positions_file = Some((term.field(), file.clone()));
                            file
                        }
                    };
                    let bytes = file.read_bytes_slice(info.positions_range.clone())?;
                    let positions = PositionReader::open(bytes)?;
                    positioned.push(Positioned {
                        blocks,
                        at: 0,
                        offset: 0,
                        positions,
                        shift,
                    });
                }
            }
        }
        if matches!(clause, Clause::Phrase(_)) {
            cursors.push(Cursor::Phrase(positioned));
        }
    }
    let Some((lead_clause, lead_term, fewest)) = lead else {
        return Ok(None);
    };
    if decoded
        .iter()
        .any(|&docs| docs > DECODE_ALWAYS && docs > fewest * DECODE_RATIO)
    {
        return Ok(None);
    }
    let alive = segment.alive_bitset();
    let mut scratch = Scratch::default();
    let mut found = 0u64;
    let mut target = range.start;
    let mut until_look = BUDGET_EVERY_MATCHES;
    loop {
        let doc = cursors[lead_clause].seek_term(lead_term, target);
        if doc >= range.end {
            break;
        }
        if !alive.is_some_and(|a| a.is_deleted(doc))
            && cursors.iter_mut().all(|c| c.holds(doc, &mut scratch))
        {
            found += 1;
        }
        target = doc + 1;
        until_look -= 1;
        if until_look == 0 {
            until_look = BUDGET_EVERY_MATCHES;
            if budget.exhausted() {
                return Ok(None);
            }
        }
    }
    Ok(Some(found))
}

/// The positions of `field` in the segment: each term's are the bytes of
/// its `TermInfo::positions_range` in it.
fn positions_file_of(segment: &SegmentReader, field: tantivy::schema::Field) -> Result<FileSlice> {
    let file = segment
        .open_read(SegmentComponent::Positions)
        .map_err(tantivy::TantivyError::from)?;
    let composite = CompositeFile::open(&file)?;
    let positions = composite.open_read(field).ok_or_else(|| {
        tantivy::TantivyError::InternalError(format!("no positions for field {field:?}"))
    })?;
    Ok(positions)
}

/// What a clause reads of the postings.
enum Cursor {
    /// One term's documents (boxed: a block's decoders are a kilobyte).
    Docs(Box<Docs>),
    /// A phrase's 4-grams, with their positions.
    Phrase(Vec<Positioned>),
}

impl Cursor {
    /// Moves term `t` of the clause to its first document at or after
    /// `target`, and returns it.
    fn seek_term(&mut self, t: usize, target: DocId) -> DocId {
        match self {
            Cursor::Docs(docs) => docs.seek(target),
            Cursor::Phrase(grams) => grams[t].seek(target),
        }
    }

    /// Whether `doc` matches the clause: it holds the term, or the
    /// 4-grams line up at their offsets somewhere in it.
    fn holds(&mut self, doc: DocId, scratch: &mut Scratch) -> bool {
        match self {
            Cursor::Docs(docs) => docs.seek(doc) == doc,
            Cursor::Phrase(grams) => {
                if !grams.iter_mut().all(|g| g.seek(doc) == doc) {
                    return false;
                }
                lines_up(grams, scratch)
            }
        }
    }
}

/// A term's documents, moved forward by its skip list.
struct Docs {
    blocks: BlockSegmentPostings,
    /// The current document's index in the loaded block.
    at: usize,
}

impl Docs {
    /// Moves to the first document at or after `target` and returns it
    /// (`TERMINATED` past the last).
    fn seek(&mut self, target: DocId) -> DocId {
        let docs = self.blocks.docs();
        if docs.last().is_some_and(|&last| last >= target) {
            // In the loaded block, usually a few documents on: a step at a
            // time beats a binary search's unpredictable branches here.
            while docs[self.at] < target {
                self.at += 1;
            }
            return docs[self.at];
        }
        self.at = self.blocks.seek(target);
        self.blocks
            .docs()
            .get(self.at)
            .copied()
            .unwrap_or(TERMINATED)
    }
}

/// One 4-gram of a phrase: its documents read block by block from the
/// first, and where the current document's positions start.
struct Positioned {
    blocks: BlockSegmentPostings,
    /// The current document's index in the loaded block.
    at: usize,
    /// Where the current document's positions start in the term's
    /// positions: the frequencies of every document before it, summed.
    offset: u64,
    positions: PositionReader,
    /// The 4-gram's character offset in the keyword.
    shift: u32,
}

impl Positioned {
    /// Moves to the first document at or after `target` and returns it
    /// (`TERMINATED` past the last), adding the frequency of each document
    /// passed to `offset`.
    fn seek(&mut self, target: DocId) -> DocId {
        loop {
            let (docs, freqs) = (self.blocks.docs(), self.blocks.freqs());
            let Some(&last) = docs.last() else {
                return TERMINATED;
            };
            if last < target {
                self.offset += freqs[self.at..].iter().map(|&f| u64::from(f)).sum::<u64>();
                self.blocks.advance();
                self.at = 0;
                continue;
            }
            // Usually a few documents on: a step at a time, as in `Docs`.
            while docs[self.at] < target {
                self.offset += u64::from(freqs[self.at]);
                self.at += 1;
            }
            return docs[self.at];
        }
    }

    /// The current document's positions, each shifted back by the
    /// 4-gram's offset in the keyword and up by `lift`: equal values are
    /// the same start of the keyword. `lift` is the largest offset, so
    /// nothing goes below zero.
    fn starts(&mut self, lift: u32, out: &mut Vec<u32>) {
        let freq = self.blocks.freqs()[self.at] as usize;
        out.clear();
        out.resize(freq, 0);
        self.positions.read(self.offset, out);
        // Stored as gaps, the first from zero.
        let mut at = lift - self.shift;
        for p in out.iter_mut() {
            at += *p;
            *p = at;
        }
    }
}

/// Buffers of positions, kept across candidates.
#[derive(Default)]
struct Scratch {
    common: Vec<u32>,
    next: Vec<u32>,
}

/// Whether one start of the keyword is a start for every 4-gram of the
/// phrase, all at the current document: the sorted starts intersected
/// gram by gram, stopping once none is left.
fn lines_up(grams: &mut [Positioned], scratch: &mut Scratch) -> bool {
    let lift = grams.iter().map(|g| g.shift).max().unwrap_or(0);
    let Scratch { common, next } = scratch;
    let Some((first, rest)) = grams.split_first_mut() else {
        return false;
    };
    first.starts(lift, common);
    for gram in rest {
        gram.starts(lift, next);
        let (mut i, mut j, mut kept) = (0, 0, 0);
        while i < common.len() && j < next.len() {
            match common[i].cmp(&next[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common[kept] = common[i];
                    kept += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        common.truncate(kept);
        if common.is_empty() {
            return false;
        }
    }
    !common.is_empty()
}

#[cfg(test)]
mod tests {
    use chaja_core::model::{Doc, Key};
    use chaja_core::sources::SourceId;
    use chaja_core::text::parse_query;
    use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query};
    use tantivy::DocSet;

    use super::*;
    use crate::create_generation;
    use crate::search::query::{clause, keyword_query};

    /// 3,000 rows of two sources, each 60 characters drawn from `가나다라`
    /// and a space (so that 4-grams repeat within a row and across many
    /// rows, and each 4-gram's postings and positions span many blocks);
    /// one row in seven deleted after the first commit.
    fn index() -> (tempfile::TempDir, crate::Generation) {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer_with_threads(32 << 20, 1).unwrap();
        let alphabet: Vec<char> = "가나다라 ".chars().collect();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let docs: Vec<Doc> = (0..3_000i64)
            .map(|i| {
                let body: String = (0..60)
                    .map(|_| {
                        // xorshift: varied rows, the same on every run.
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        alphabet[(state % 5) as usize]
                    })
                    .collect();
                Doc {
                    source: SourceId::from_index((i % 2) as usize),
                    key: Key::Int(i),
                    title: None,
                    body: vec![body],
                    created_at: i * 7 % 1_000,
                    attributes: Vec::new(),
                }
            })
            .collect();
        for doc in &docs {
            writer.upsert(doc).unwrap();
        }
        writer.commit(1).unwrap();
        for (i, doc) in docs.iter().enumerate() {
            if i % 7 == 3 {
                writer.delete(doc.source, &doc.key.text());
            }
        }
        writer.commit(2).unwrap();
        generation.reload().unwrap();
        (dir, generation)
    }

    /// The alive documents of `range` that tantivy's own scorer matches.
    fn scored(
        generation: &crate::Generation,
        segment: &SegmentReader,
        q: &str,
        range: Range<DocId>,
    ) -> u64 {
        let searcher = generation.reader.searcher();
        let clauses: Vec<(Occur, Box<dyn Query>)> = parse_query(q)
            .iter()
            .map(|k| (Occur::Must, keyword_query(&generation.fields, k, false)))
            .collect();
        let query = BooleanQuery::new(clauses);
        let weight = query
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        let mut scorer = weight.scorer(segment, 1.0).unwrap();
        let mut doc = scorer.seek(range.start);
        let mut n = 0;
        while doc < range.end {
            n += u64::from(!segment.is_deleted(doc));
            doc = scorer.advance();
        }
        n
    }

    /// Every range of every run, and windows cut from them: a long
    /// keyword's count from postings and positions equals the scorer's, for
    /// 4-grams that repeat in the keyword and in the rows, a keyword with
    /// a space, covers of two and three 4-grams, and ANDs of a phrase with
    /// a term and with another phrase.
    #[test]
    fn phrase_counts_equal_the_scorers() {
        let (_dir, generation) = index();
        let searcher = generation.reader.searcher();
        let queries = [
            "가나다라가",
            "나다라가나다",
            "가가가가가가가가",
            "\"다라 가나\"",
            "가나다라가나다라가",
            "가나다라가 라",
            "나다라가나 가나다라가",
        ];
        let mut between = 0;
        for q in queries {
            let clauses: Vec<Clause> = parse_query(q)
                .iter()
                .map(|k| clause(&generation.fields, k))
                .collect();
            assert!(clauses.iter().any(|c| matches!(c, Clause::Phrase(_))));
            for segment in searcher.segment_readers() {
                for (_, run) in crate::order::runs(segment).unwrap() {
                    let len = run.end - run.start;
                    for cut in [0, 1, len / 7, len / 3, len / 2, len - 1] {
                        for range in [run.start + cut..run.end, run.start..run.end - cut] {
                            let want = scored(&generation, segment, q, range.clone());
                            let got = count(segment, &clauses, range.clone(), &Budget::unlimited())
                                .unwrap();
                            assert_eq!(got, Some(want), "{q} in {range:?}");
                            if want > 0 && want < u64::from(range.end - range.start) / 2 {
                                between += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(
            between > 50,
            "too few ranges where some rows match: {between}"
        );
    }

    /// A phrase whose 4-grams are each in rows, but never in line, counts
    /// nothing; one with a 4-gram no row holds counts nothing without
    /// reading.
    #[test]
    fn grams_out_of_line_count_nothing() {
        let (_dir, generation) = index();
        let searcher = generation.reader.searcher();
        for q in ["가나다라마", "라라라라라라라라라라라라라라라라라라"] {
            let clauses: Vec<Clause> = parse_query(q)
                .iter()
                .map(|k| clause(&generation.fields, k))
                .collect();
            for segment in searcher.segment_readers() {
                let all = 0..segment.max_doc();
                let want = scored(&generation, segment, q, all.clone());
                assert_eq!(want, 0, "{q}");
                let got = count(segment, &clauses, all, &Budget::unlimited()).unwrap();
                assert_eq!(got, Some(0), "{q}");
            }
        }
    }
}
