//! What searches keep per generation between queries: every cache they
//! read and fill, in one type that [`Generation`](crate::Generation) holds
//! and never reaches into.
//!
//! A segment never changes but for its deletions (and, for what reads
//! attributes, its patches), so what a query learns of a segment stays
//! true under a key that names the segment and its delete count:
//! - [`SegmentTotals`] and [`SegmentFacets`]: a query's exact total by
//!   source and its facet counts, so that a query counted once only finds
//!   its top-k the next time (see `search`);
//! - [`DocSources`]: each document's source, one byte each, which counting
//!   by source reads per match;
//! - [`DeletedDocs`]: the segment's deleted documents, which counting from
//!   postings subtracts;
//! - [`TermBits`]: common terms' and long keywords' documents as bitsets
//!   (see `search::bits`);
//! - [`AttrArrays`]: facet ordinals and numbers by document (see
//!   `attributes`).
//!
//! Every cache is bounded, by entries or by bytes, so that memory stays
//! bounded whatever the queries.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tantivy::index::SegmentId;
use tantivy::{DocId, Searcher, SegmentReader, Term};

use chaja_core::sources::MAX_SOURCES;

use crate::attr_layout::AttrLayout;
use crate::attributes::{drop_merged, AttrArrays, SegmentFacetValues};
use crate::uid::tag_source;
use crate::{IndexError, Result};

/// Matches by source position (the low bits of their `tag`).
pub type SourceCounts = [u64; MAX_SOURCES];

/// segment → the source position of each of its documents. A segment's
/// documents never change, so this is read from `tag` once per segment
/// (see [`Caches::prime`]), and dropped when the segment is merged away.
pub type DocSources = moka::sync::Cache<SegmentId, Arc<[u8]>>;

/// (segment, its deleted-document count, its patch stamp for a query that
/// reads attributes (else 0), query) → matching documents by source.
pub type SegmentTotals = moka::sync::Cache<(SegmentId, u32, u64, Arc<str>), SourceCounts>;

/// (segment, its deleted-document count, its patch stamp, query and
/// facets) → each facet's counts by value in that segment; weighed by
/// values held.
pub type SegmentFacets =
    moka::sync::Cache<(SegmentId, u32, u64, Arc<str>), Arc<SegmentFacetValues>>;

/// The deleted doc ids of a segment, ascending, by segment and delete
/// count: a segment's deletions only grow, and each count has one list.
pub(crate) type DeletedDocs = moka::sync::Cache<(SegmentId, u32), Arc<[DocId]>>;

/// The documents of common terms and keywords as bitsets, bounded by their
/// bytes: by segment, the documents the bitset covers, and the term (see
/// `search::term_count` and `search::keyword_count`). A bitset's first
/// word is the one of its first document: a term's covers its whole
/// segment, a long keyword's one run of a source (see `order`), so that a
/// segment's runs are found in parallel.
pub(crate) type TermBits = moka::sync::Cache<BitsKey, Arc<[u64]>>;

/// A kept bitset's key: its segment, the documents it covers, its term.
pub(crate) type BitsKey = (SegmentId, Range<DocId>, Term);

/// The most bytes of [`TermBits`] a generation keeps: a term's or a long
/// keyword's bitsets take one bit per document, so a budget of bytes is a
/// number of bitsets that shrinks as the index grows (measured in
/// docs/benchmarks/040-kept-bitsets-read-by-any-query.md).
const TERM_BITS_BYTES: u64 = 512 << 20;

/// Entries of [`SegmentTotals`]: one per (segment, query).
const TOTALS_ENTRIES: u64 = 100_000;

/// Facet values [`SegmentFacets`] holds, over every entry.
const FACET_VALUES: u64 = 1_000_000;

/// Bytes of [`AttrArrays`].
const ATTR_ARRAY_BYTES: u64 = 512 << 20;

/// Bytes of [`DocSources`]: one per document.
const DOC_SOURCES_BYTES: u64 = 1 << 30;

/// Deleted doc ids [`DeletedDocs`] holds, over every segment.
const DELETED_DOCS: u64 = 8 << 20;

/// Every cache of one generation's searches, and the counter of the
/// matches they visited.
pub struct Caches {
    pub(crate) totals: SegmentTotals,
    pub(crate) facets: SegmentFacets,
    pub(crate) attr_arrays: AttrArrays,
    pub(crate) doc_sources: DocSources,
    pub(crate) deleted: DeletedDocs,
    pub(crate) term_bits: TermBits,
    /// Matches searches have visited in this generation: the work counter
    /// that shows a stopped search stopped.
    pub(crate) scanned: AtomicU64,
}

impl Caches {
    pub(crate) fn new() -> Caches {
        let weigh = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Caches {
            totals: moka::sync::Cache::new(TOTALS_ENTRIES),
            facets: moka::sync::Cache::builder()
                .weigher(move |_, values: &Arc<SegmentFacetValues>| {
                    weigh(values.iter().map(Vec::len).sum::<usize>() + 1)
                })
                .max_capacity(FACET_VALUES)
                .build(),
            attr_arrays: AttrArrays::new(ATTR_ARRAY_BYTES),
            doc_sources: moka::sync::Cache::builder()
                .weigher(move |_, sources: &Arc<[u8]>| weigh(sources.len()))
                .max_capacity(DOC_SOURCES_BYTES)
                .build(),
            deleted: moka::sync::Cache::builder()
                .weigher(move |_, docs: &Arc<[DocId]>| weigh(docs.len()))
                .max_capacity(DELETED_DOCS)
                .build(),
            term_bits: moka::sync::Cache::builder()
                .weigher(move |_, bits: &Arc<[u64]>| weigh(bits.len() * 8))
                .max_capacity(TERM_BITS_BYTES)
                .build(),
            scanned: AtomicU64::new(0),
        }
    }

    /// Matches searches have visited so far.
    pub fn scanned(&self) -> u64 {
        self.scanned.load(Ordering::Relaxed)
    }

    /// Builds the per-document arrays the scan reads (sources, facet
    /// ordinals, numbers) for each segment of `searcher` that has none
    /// yet, and drops those of segments merged away. Blocking: one pass
    /// over each new segment's columns, so that no query pays for it.
    pub(crate) fn prime(&self, searcher: &Searcher, layout: &AttrLayout) -> Result<()> {
        let mut live = HashSet::new();
        for segment in searcher.segment_readers() {
            live.insert(segment.segment_id());
            self.doc_sources(segment)?;
            self.attr_arrays.prime(segment, layout)?;
        }
        drop_merged(&self.doc_sources, &live, |id| *id);
        self.attr_arrays.retain(&live);
        Ok(())
    }

    /// The source position of every document of `segment`, one byte each:
    /// what counting by source reads per match, instead of a 64-bit `tag`
    /// (1 MB for a million documents, kept per segment).
    pub(crate) fn doc_sources(&self, segment: &SegmentReader) -> Result<Arc<[u8]>> {
        self.doc_sources
            .try_get_with(segment.segment_id(), || {
                let tag = segment.fast_fields().u64("tag")?;
                let max = segment.max_doc();
                let mut sources = Vec::with_capacity(max as usize);
                let mut docs = Vec::with_capacity(4096);
                let mut tags = vec![None; 4096];
                for start in (0..max).step_by(4096) {
                    docs.clear();
                    docs.extend(start..max.min(start + 4096));
                    let tags = &mut tags[..docs.len()];
                    tags.fill(None);
                    tag.first_vals(&docs, tags);
                    sources.extend(tags.iter().map(|t| tag_source(t.unwrap_or_default()) as u8));
                }
                Ok::<_, tantivy::TantivyError>(Arc::from(sources))
            })
            .map_err(|e| IndexError::Tantivy((*e).clone()))
    }
}
