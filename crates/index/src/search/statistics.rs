//! BM25's statistics over rows, not documents.
//!
//! tantivy's own statistics count every document of a segment, deleted or
//! not (until a merge drops them). Patch documents (see `patches`) are
//! documents too, but rows they are not: they hold no text. Counted, a
//! storm of likes that leaves 100,000 patches would double the document
//! count every term's idf and the average field length are taken over,
//! and relevance would rank differently until the patches are folded.
//! So the document count leaves them out: a patched index scores every
//! row as the same rows written whole do.
//!
//! A segment's patches are its tail, after every run of rows (see
//! `order`), so their number is what the runs leave of the segment.

use tantivy::query::{Bm25StatisticsProvider, EnableScoring};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

use crate::View;

/// The view's searcher, with its patch documents left out of the count.
pub(super) struct RowStatistics<'a> {
    searcher: &'a Searcher,
    patch_docs: u64,
}

impl<'a> RowStatistics<'a> {
    pub(super) fn of(view: &'a View) -> RowStatistics<'a> {
        let segments = view.searcher.segment_readers();
        let patch_docs = segments
            .iter()
            .zip(&view.columns)
            .map(|(segment, columns)| {
                let rows_end = columns.runs.last().map_or(0, |(_, run)| run.end);
                u64::from(segment.max_doc() - rows_end)
            })
            .sum();
        RowStatistics {
            searcher: &view.searcher,
            patch_docs,
        }
    }

    /// Rows in the view: documents, deleted or not, less patches.
    pub(super) fn rows(&self) -> tantivy::Result<u64> {
        self.total_num_docs()
    }

    /// Scoring on, with these statistics.
    pub(super) fn scoring(&'a self) -> EnableScoring<'a> {
        EnableScoring::enabled_from_statistics_provider(self, self.searcher)
    }
}

impl Bm25StatisticsProvider for RowStatistics<'_> {
    /// A patch has no text, so no token to leave out.
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.searcher.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.searcher.total_num_docs()? - self.patch_docs)
    }

    /// A patch holds no term a query scores.
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searcher.doc_freq(term)
    }
}
