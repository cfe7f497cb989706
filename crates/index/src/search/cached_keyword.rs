//! A long keyword's documents read from its kept bitsets, in any query.
//!
//! `kept` keeps a common long keyword's documents as a bitset per run once
//! a newest-first search has counted them. Its phrase of 4-grams checks
//! the positions of every candidate, so a later query that visits the
//! keyword's matches (relevance scores every row of its set; `match=morph`
//! counts the set's union with its morphemes) would pay that check again
//! for rows already known. [`CachedKeywordQuery`] is the phrase with a way out:
//! where every run of a segment has the keyword's bitset kept, its scorer
//! walks the set bits instead; anywhere else it is the phrase. Both give
//! the same documents (deleted ones included: the scan skips them), so a
//! query's rows and totals do not depend on what is kept.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use tantivy::index::SegmentId;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

use crate::caches::TermBits;

/// What a query reads kept bitsets from: the cache, and each segment's
/// runs (the pieces a long keyword is kept in).
#[derive(Clone)]
pub(crate) struct CachedBits {
    bits: TermBits,
    runs: Arc<HashMap<SegmentId, Vec<Range<DocId>>>>,
}

impl CachedBits {
    pub(super) fn new(bits: &TermBits, runs: HashMap<SegmentId, Vec<Range<DocId>>>) -> CachedBits {
        CachedBits {
            bits: bits.clone(),
            runs: Arc::new(runs),
        }
    }

    /// The kept bitsets of `key` that cover every document of `segment`,
    /// one per run (a long keyword is kept per run, see `kept`); `None`
    /// when some part is not kept.
    fn pieces(&self, segment: &SegmentReader, key: &Term) -> Option<Vec<Piece>> {
        let (id, max_doc) = (segment.segment_id(), segment.max_doc());
        let mut pieces = Vec::new();
        let mut covered = 0;
        for run in self.runs.get(&id)? {
            if run.start != covered {
                return None;
            }
            let bits = self.bits.get(&(id, run.clone(), key.clone()))?;
            pieces.push(Piece {
                docs: run.clone(),
                base: run.start / 64 * 64,
                bits,
            });
            covered = run.end;
        }
        (covered == max_doc).then_some(pieces)
    }
}

impl fmt::Debug for CachedBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedBits")
            .field("segments", &self.runs.len())
            .finish()
    }
}

/// A long keyword: its phrase, read from its kept bitsets where a segment
/// has them all. Unscored only: with scoring on it is the phrase, whose
/// BM25 reads term frequencies.
#[derive(Debug)]
pub(super) struct CachedKeywordQuery {
    phrase: Box<dyn Query>,
    /// The keyword's key among the kept bitsets (see `keyword_count::long_key`).
    key: Term,
    kept: CachedBits,
}

impl CachedKeywordQuery {
    pub(super) fn new(phrase: Box<dyn Query>, key: Term, kept: CachedBits) -> CachedKeywordQuery {
        CachedKeywordQuery { phrase, key, kept }
    }
}

impl Clone for CachedKeywordQuery {
    fn clone(&self) -> CachedKeywordQuery {
        CachedKeywordQuery::new(self.phrase.box_clone(), self.key.clone(), self.kept.clone())
    }
}

impl Query for CachedKeywordQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let phrase = self.phrase.weight(enable_scoring)?;
        if enable_scoring.is_scoring_enabled() {
            return Ok(phrase);
        }
        Ok(Box::new(CachedKeywordWeight {
            phrase,
            key: self.key.clone(),
            kept: self.kept.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.phrase.query_terms(visitor);
    }
}

struct CachedKeywordWeight {
    phrase: Box<dyn Weight>,
    key: Term,
    kept: CachedBits,
}

impl Weight for CachedKeywordWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        match self.kept.pieces(reader, &self.key) {
            Some(pieces) => Ok(Box::new(BitsScorer::new(pieces))),
            None => self.phrase.scorer(reader, boost),
        }
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.phrase.explain(reader, doc)
    }
}

/// A kept bitset and the documents it covers; its first word is the one
/// of document `base`.
struct Piece {
    docs: Range<DocId>,
    base: DocId,
    bits: Arc<[u64]>,
}

/// The set bits of consecutive pieces, as a scorer of constant score.
struct BitsScorer {
    pieces: Vec<Piece>,
    /// The piece that holds `doc`.
    at: usize,
    doc: DocId,
    len: u32,
}

impl BitsScorer {
    fn new(pieces: Vec<Piece>) -> BitsScorer {
        let len = pieces
            .iter()
            .flat_map(|piece| piece.bits.iter())
            .map(|word| word.count_ones())
            .sum();
        let mut docs = BitsScorer {
            pieces,
            at: 0,
            doc: 0,
            len,
        };
        docs.doc = docs.first_from(0);
        docs
    }

    /// The first set document at or after `target`, from the current
    /// piece on.
    fn first_from(&mut self, target: DocId) -> DocId {
        while let Some(piece) = self.pieces.get(self.at) {
            if target < piece.docs.end {
                let bit = target.max(piece.docs.start) - piece.base;
                let mut at = (bit / 64) as usize;
                let mut word = piece.bits[at] & (!0u64 << (bit % 64));
                loop {
                    if word != 0 {
                        let doc = piece.base + at as DocId * 64 + word.trailing_zeros();
                        if doc < piece.docs.end {
                            return doc;
                        }
                        break;
                    }
                    at += 1;
                    match piece.bits.get(at) {
                        Some(&next) => word = next,
                        None => break,
                    }
                }
            }
            self.at += 1;
        }
        TERMINATED
    }
}

impl DocSet for BitsScorer {
    fn advance(&mut self) -> DocId {
        if self.doc != TERMINATED {
            self.doc = self.first_from(self.doc + 1);
        }
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc < target {
            self.doc = self.first_from(target);
        }
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.len
    }
}

impl Scorer for BitsScorer {
    fn score(&mut self) -> Score {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pieces, their bits at both ends of words: every set document in
    /// order, by advancing and by seeking, and none of the bits outside a
    /// piece's documents.
    #[test]
    fn walks_the_set_bits_of_each_piece() {
        // Documents 0..100 in a bitset from 0, 100..300 from 64; a stray
        // bit past the first piece's end (document 120) must not show.
        let mut first = vec![0u64; 2];
        let mut second = vec![0u64; 4];
        let want: Vec<DocId> = vec![0, 5, 63, 64, 99, 100, 127, 128, 200, 255, 299];
        for &doc in &want {
            match doc < 100 {
                true => first[(doc / 64) as usize] |= 1 << (doc % 64),
                false => second[((doc - 64) / 64) as usize] |= 1 << ((doc - 64) % 64),
            }
        }
        first[1] |= 1 << (120 - 64);
        second[0] |= 1 << (70 - 64);
        let pieces = || {
            vec![
                Piece {
                    docs: 0..100,
                    base: 0,
                    bits: first.clone().into(),
                },
                Piece {
                    docs: 100..300,
                    base: 64,
                    bits: second.clone().into(),
                },
            ]
        };
        let mut docs = BitsScorer::new(pieces());
        let mut got = Vec::new();
        while docs.doc() != TERMINATED {
            got.push(docs.doc());
            docs.advance();
        }
        assert_eq!(got, want);
        for target in 0..=300 {
            let mut docs = BitsScorer::new(pieces());
            let next = want.iter().copied().find(|&d| d >= target);
            assert_eq!(docs.seek(target), next.unwrap_or(TERMINATED), "{target}");
        }
    }
}
