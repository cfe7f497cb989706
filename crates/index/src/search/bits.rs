//! Documents as bitsets, one bit per document: what counting ANDs of
//! common terms and keywords reads (see `term_count` and `keyword_count`).
//!
//! A bitset's word 0 holds documents 0 to 63 of what it covers. A common
//! term's bitset of its whole segment is kept in the generation's
//! [`TermBits`] cache, since the common terms recur in queries that are
//! otherwise new; a segment's postings never change, so neither does its
//! bitset, and the range's deletions are cleared per search.

use std::ops::Range;
use std::sync::Arc;

use tantivy::postings::BlockSegmentPostings;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, SegmentReader, Term};

use crate::caches::{DeletedDocs, TermBits};
use crate::Result;

/// Terms of an AND are decoded into bitsets only when the rarest is in at
/// least one document of this many of the range (tantivy's dense
/// intersection takes the same ratio); below it, seeking from the rarest
/// term's matches reads less.
pub(super) const DENSE_RATIO: u64 = 32;

/// The words `words` of `term`'s bitset in `segment` (word 0 is documents
/// 0 to 63): read from its whole segment's bitset when kept, which is kept
/// first when `keep` and the term is in a document of [`DENSE_RATIO`] or
/// more; otherwise decoded for these words only.
pub(super) fn term_words(
    segment: &SegmentReader,
    term: &Term,
    words: Range<usize>,
    keep: bool,
    bits: &TermBits,
) -> Result<Vec<u64>> {
    let max_doc = segment.max_doc();
    let key = (segment.segment_id(), 0..max_doc, term.clone());
    if let Some(held) = bits.get(&key) {
        return Ok(held[words].to_vec());
    }
    let inverted = segment.inverted_index(term.field())?;
    let Some(info) = inverted.get_term_info(term)? else {
        return Ok(vec![0; words.len()]);
    };
    let mut postings =
        inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
    if keep && u64::from(info.doc_freq) * DENSE_RATIO >= u64::from(max_doc) {
        let mut whole = vec![0u64; max_doc.div_ceil(64) as usize];
        fill(&mut postings, &(0..max_doc), &mut whole);
        let part = whole[words].to_vec();
        bits.insert(key, whole.into());
        return Ok(part);
    }
    let mut part = vec![0u64; words.len()];
    let docs = words.start as DocId * 64..(words.end as DocId * 64).min(max_doc);
    fill(&mut postings, &docs, &mut part);
    Ok(part)
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

/// The documents of non-empty `range` whose bits are set in `all`, less
/// those in `gone` (deleted, within the range): `all` holds the words from
/// the one of the range's first document to the one of its last, the
/// sets' bitsets ANDed, so bits outside the range are masked first.
pub(super) fn alive_in(mut all: Vec<u64>, range: &Range<DocId>, gone: &[DocId]) -> u64 {
    let first = range.start / 64 * 64;
    let last = all.len() - 1;
    all[0] &= !0u64 << (range.start % 64);
    if !range.end.is_multiple_of(64) {
        all[last] &= (1u64 << (range.end % 64)) - 1;
    }
    for &doc in gone {
        let bit = doc - first;
        all[(bit / 64) as usize] &= !(1u64 << (bit % 64));
    }
    all.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// Sets the bit of each of the postings' documents within `range`, in
/// `bits`, all zero before.
///
/// The postings are sorted, so each word of `bits` is filled by one run
/// of documents: the word being filled is kept in a register and stored
/// whole after each document, never read back. Or-ing each bit into
/// memory made every document wait for the store of the one before (this
/// loop was a tenth of the server's time under never-seen queries at 1M
/// rows), and storing only when the word changed was a branch the
/// processor could not predict for terms with a few documents per word.
/// A block's documents past the range (or its padding) are cut once per
/// block, so the loop itself has no test but its own end.
pub(super) fn fill(blocks: &mut BlockSegmentPostings, range: &Range<DocId>, bits: &mut [u64]) {
    let mut from = blocks.seek(range.start);
    let (mut at, mut word) = (0usize, 0u64);
    loop {
        let docs = blocks.docs();
        // Sorted, and the padding of the last block is TERMINATED.
        let end = docs.partition_point(|&doc| doc < range.end);
        if from >= end {
            break;
        }
        for &doc in &docs[from..end] {
            let bit = doc - range.start;
            let here = (bit / 64) as usize;
            // A new word starts empty: no branch, a conditional move.
            word = if here == at { word } else { 0 };
            word |= 1u64 << (bit % 64);
            bits[here] = word;
            at = here;
        }
        if end < docs.len() {
            break;
        }
        blocks.advance();
        from = 0;
    }
}
