//! The order of documents inside a segment: by source, then newest first,
//! then patches.
//!
//! Every segment is sorted on one column, `order`, descending. A row's
//! value holds its source's position in the high bits (the first source
//! highest) and its `created_at` below, so each segment is a run of
//! documents per source, each run newest first, and the patches (value 0,
//! see `patches`) are the segment's tail:
//!
//! ```text
//! doc ids:  0 ......................................... max_doc
//!           [ source 0, newest → oldest ][ source 1, … ][ patches ]
//! ```
//!
//! Two things follow, and the search relies on both:
//! - the newest-first top-k of a run is final as soon as a match is older
//!   than the k-th best, so a search stops early in each run;
//! - a source, and a time window within it, is a doc-id range. A term's
//!   postings count the documents below a doc id from their skip list
//!   (`BlockSegmentPostings::rank`), so the matches of a one-term keyword
//!   in a range are counted by source without visiting them.
//!
//! Lucene sorts segments the same way for the same reasons (index sorting,
//! and counting a sorted range as a doc-id interval).

use std::ops::Range;

use tantivy::{DocId, SegmentReader};

use chaja_core::sources::{SourceId, MAX_SOURCES};

/// Bits of the time below the source.
const TIME_BITS: u32 = 59;
const TIME_LIMIT: i64 = 1 << (TIME_BITS - 1);

/// The order of a patch: below every row's (a row's is at least 1).
pub(crate) const PATCH_ORDER: u64 = 0;

/// `created_at` of a patch: below every row's, so that a patch falls in no
/// time window; its `order` (`PATCH_ORDER`) puts it after every row of its
/// segment. No query matches a patch anyway: it has no text.
pub(crate) const PATCH_TIME: i64 = i64::MIN;

/// The `created_at` the index keeps for a row: within ±2^58 ms (±9 million
/// years) of the epoch, so that it fits below the source in `order`. A
/// column of another unit read as milliseconds (nanoseconds since the
/// epoch, say) lands beyond that and is clamped; the `created_at` field
/// holds the clamped time too, so that the early stop, time windows and
/// cursors, which read that field, see the order the segment is sorted in.
pub(crate) fn clamp_time(created_at: i64) -> i64 {
    created_at.clamp(1 - TIME_LIMIT, TIME_LIMIT - 1)
}

/// The `order` of a row of `source` created at `created_at`.
pub(crate) fn sort_key(source: SourceId, created_at: i64) -> u64 {
    let rank = (MAX_SOURCES - 1 - source.index()) as u64;
    // In [1, 2^59 - 1]: never 0, which is a patch's.
    let time = clamp_time(created_at) + TIME_LIMIT;
    (rank << TIME_BITS) | time as u64
}

/// The source position an `order` value belongs to; `None` for a patch.
fn source_of(order: u64) -> Option<usize> {
    (order != PATCH_ORDER).then(|| MAX_SOURCES - 1 - (order >> TIME_BITS) as usize)
}

/// The runs of `segment`: for each source it holds, in order, the source
/// position and its doc ids. One binary search per run, over the `order`
/// column.
pub(crate) fn runs(segment: &SegmentReader) -> tantivy::Result<Vec<(usize, Range<DocId>)>> {
    let order = segment.fast_fields().u64("order")?;
    let at = |doc: DocId| order.first(doc).unwrap_or(PATCH_ORDER);
    let max = segment.max_doc();
    let mut runs = Vec::new();
    let mut start = 0;
    while start < max {
        let Some(source) = source_of(at(start)) else {
            break;
        };
        // The run's values are above this floor; the next run's are not.
        let floor = ((MAX_SOURCES - 1 - source) as u64) << TIME_BITS;
        let end = partition_point(start..max, |doc| at(doc) <= floor);
        runs.push((source, start..end));
        start = end;
    }
    Ok(runs)
}

/// The first doc id of `range` for which `pred` holds, `range.end` if
/// none; `pred` is false, then true, along the range.
pub(crate) fn partition_point(range: Range<DocId>, pred: impl Fn(DocId) -> bool) -> DocId {
    let (mut lo, mut hi) = (range.start, range.end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_first_then_time_newest_first_then_patches() {
        let s = SourceId::from_index;
        let keys = [
            sort_key(s(0), 2_000),
            sort_key(s(0), -5),
            sort_key(s(0), i64::MIN),
            sort_key(s(1), i64::MAX),
            sort_key(s(1), 1_000),
            sort_key(s(15), i64::MIN),
            PATCH_ORDER,
        ];
        for pair in keys.windows(2) {
            assert!(pair[0] > pair[1], "{pair:?} must sort descending");
        }
        assert_eq!(source_of(keys[2]), Some(0));
        assert_eq!(source_of(keys[3]), Some(1));
        assert_eq!(source_of(keys[5]), Some(15));
        assert_eq!(source_of(PATCH_ORDER), None);
    }
}
