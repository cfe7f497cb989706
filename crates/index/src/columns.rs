//! The columns every search reads of a segment, opened once per reload.
//!
//! Opening a tantivy column is not free. In a segment sorted by source,
//! then newest first (see `order`), `created_at` and `uid` are stored
//! blockwise-linear, and opening one deserializes its table of blocks, one
//! entry per 512 documents. A search opened three columns per scanned range
//! and two per hit, and at 1M rows that was an eighth of the CPU of a query
//! the server had never seen. A segment's documents never change, so the
//! view opens its columns, and finds its runs, once.

use std::ops::Range;

use tantivy::columnar::Column;
use tantivy::{DocId, SegmentReader};

use crate::order;

/// A segment's sort and identity columns and its runs.
pub(crate) struct SegmentColumns {
    pub(crate) created: Column<i64>,
    pub(crate) uid: Column<u64>,
    pub(crate) tag: Column<u64>,
    /// For each source it holds, in order, the source position and its
    /// doc ids (see `order::runs`).
    pub(crate) runs: Vec<(usize, Range<DocId>)>,
}

impl SegmentColumns {
    pub(crate) fn open(segment: &SegmentReader) -> tantivy::Result<SegmentColumns> {
        let fast = segment.fast_fields();
        Ok(SegmentColumns {
            created: fast.i64("created_at")?,
            uid: fast.u64("uid")?,
            tag: fast.u64("tag")?,
            runs: order::runs(segment)?,
        })
    }
}
