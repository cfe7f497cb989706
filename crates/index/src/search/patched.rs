//! The patched documents as a query: the other half of an
//! `attr.<name>=<value>` filter. A filter's term holds what documents said
//! before their patches (see `patches`), so every patched document is a
//! candidate, and the scan checks it against its patch.

use std::sync::Arc;

use tantivy::query::{ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, SegmentReader, TERMINATED};

use crate::patches::Patches;

/// Matches every patched document: the other half of an
/// `attr.<name>=<value>` filter, whose term's postings hold what documents
/// said before their patches (the scan checks these against the patch).
#[derive(Clone, Debug)]
pub(crate) struct PatchedQuery(pub(crate) Arc<Patches>);

impl Query for PatchedQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(PatchedWeight(self.0.clone())))
    }
}

struct PatchedWeight(Arc<Patches>);

impl Weight for PatchedWeight {
    fn scorer(&self, reader: &SegmentReader, boost: f32) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.0.segment(reader.segment_id()) {
            Some(patched) => Box::new(ConstScorer::new(DocList::new(patched.docs.clone()), boost)),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let patched = self
            .0
            .segment(reader.segment_id())
            .is_some_and(|p| p.get(doc).is_some());
        if !patched {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} is not patched"
            )));
        }
        Ok(Explanation::new("patched", 1.0))
    }
}

/// A sorted list of documents as a doc set. tantivy's `VecDocSet` would
/// copy the list for every scorer and seek one document at a time.
struct DocList {
    docs: Arc<[DocId]>,
    at: usize,
}

impl DocList {
    fn new(docs: Arc<[DocId]>) -> DocList {
        DocList { docs, at: 0 }
    }
}

impl DocSet for DocList {
    fn advance(&mut self) -> DocId {
        self.at = (self.at + 1).min(self.docs.len());
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc() < target {
            self.at += self.docs[self.at..].partition_point(|&d| d < target);
        }
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.at) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doc_list_advances_and_seeks_like_its_list() {
        let mut docs = DocList::new(Arc::from(vec![2, 5, 9, 40]));
        assert_eq!(docs.doc(), 2);
        assert_eq!(docs.seek(1), 2);
        assert_eq!(docs.seek(6), 9);
        assert_eq!(docs.seek(9), 9);
        assert_eq!(docs.advance(), 40);
        assert_eq!(docs.seek(41), TERMINATED);
        assert_eq!(docs.advance(), TERMINATED);
        assert_eq!(DocList::new(Arc::from(vec![])).doc(), TERMINATED);
    }
}
