//! The serving writer's merge policy: patches apart from documents.
//!
//! tantivy's `LogMergePolicy` groups segments by size and merges a group
//! once it holds 8 of them; every segment under 10,000 documents is in the
//! smallest group. A storm of likes commits a segment of patches (see
//! `patches`) every round, so 8 of them gather within seconds, and were
//! merged together with whatever small segments of documents sat in that
//! group: each merge rewrote those documents' grams and positions, about
//! half the indexer's CPU during a 500/s storm. Patches are tiny and
//! documents are not, so each kind is merged with its own kind only, by
//! the same log policy: a storm of likes merges small segments of
//! patches, and documents are merged when documents are written.
//!
//! A segment's kind is known once a reload has read it (see
//! `Patches::next`); until then it is left out of every merge.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};

use crate::patches::Tracker;

/// Which segments a reload has seen, and which of them hold only patches.
#[derive(Debug, Default)]
pub(crate) struct SegmentKinds {
    known: HashSet<SegmentId>,
    patches_only: HashSet<SegmentId>,
}

impl SegmentKinds {
    pub(crate) fn of(tracker: &Tracker) -> SegmentKinds {
        let (known, patches_only) = tracker.kinds();
        SegmentKinds {
            known,
            patches_only,
        }
    }
}

#[derive(Debug)]
pub(crate) struct ApartMergePolicy {
    documents: LogMergePolicy,
    patches: LogMergePolicy,
    kinds: Arc<RwLock<SegmentKinds>>,
}

impl ApartMergePolicy {
    pub(crate) fn new(kinds: Arc<RwLock<SegmentKinds>>) -> ApartMergePolicy {
        // tantivy's smallest level holds every segment under 10,000
        // documents, so a segment of 9,000 patches was merged again with
        // each 8 new segments of a hundred: a storm rewrote all its
        // patches every few seconds. With levels from 100 up, a patch is
        // rewritten about once per level, as a log-structured merge means.
        let mut patches = LogMergePolicy::default();
        patches.set_min_layer_size(100);
        ApartMergePolicy {
            documents: LogMergePolicy::default(),
            patches,
            kinds,
        }
    }
}

impl MergePolicy for ApartMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let kinds = self.kinds.read().expect("segment kinds lock poisoned");
        let (patches, documents): (Vec<SegmentMeta>, Vec<SegmentMeta>) = segments
            .iter()
            .filter(|s| kinds.known.contains(&s.id()))
            .cloned()
            .partition(|s| kinds.patches_only.contains(&s.id()));
        let mut candidates = self.documents.compute_merge_candidates(&documents);
        candidates.extend(self.patches.compute_merge_candidates(&patches));
        candidates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight small segments of patches beside small segments of documents
    /// (the storm that merged them together): patches merge with patches,
    /// documents with documents, and a segment no reload has read yet with
    /// neither.
    #[test]
    fn patches_and_documents_are_merged_apart() {
        let index = tantivy::Index::create_in_ram(crate::schema::build_schema());
        let meta = |docs| index.new_segment_meta(SegmentId::generate_random(), docs);
        let patches: Vec<SegmentMeta> = (0..8).map(|_| meta(100)).collect();
        let documents: Vec<SegmentMeta> = (0..8).map(|_| meta(3_000)).collect();
        let unread = meta(50);
        let kinds = SegmentKinds {
            known: patches.iter().chain(&documents).map(|s| s.id()).collect(),
            patches_only: patches.iter().map(|s| s.id()).collect(),
        };
        let policy = ApartMergePolicy::new(Arc::new(RwLock::new(kinds)));
        let mut all = patches.clone();
        all.extend(documents.iter().cloned());
        all.push(unread.clone());
        let candidates = policy.compute_merge_candidates(&all);
        let ids = |segments: &[SegmentMeta]| -> HashSet<SegmentId> {
            segments.iter().map(|s| s.id()).collect()
        };
        let merged: Vec<HashSet<SegmentId>> = candidates
            .iter()
            .map(|c| c.0.iter().copied().collect())
            .collect();
        assert_eq!(merged.len(), 2, "{merged:?}");
        assert!(merged.contains(&ids(&patches)));
        assert!(merged.contains(&ids(&documents)));
        // A large segment of patches waits for its own level.
        let large = meta(9_000);
        let mut kinds = SegmentKinds::default();
        kinds.known.insert(large.id());
        kinds.patches_only.insert(large.id());
        for small in &patches {
            kinds.known.insert(small.id());
            kinds.patches_only.insert(small.id());
        }
        let policy = ApartMergePolicy::new(Arc::new(RwLock::new(kinds)));
        let mut pool = patches.clone();
        pool.push(large.clone());
        let merged = policy.compute_merge_candidates(&pool);
        assert_eq!(merged.len(), 1);
        assert!(
            !merged[0].0.contains(&large.id()),
            "the large segment is merged again"
        );
        // tantivy's own policy would have merged all seventeen at once.
        let together = LogMergePolicy::default().compute_merge_candidates(&all);
        assert_eq!(together.len(), 1);
        assert_eq!(together[0].0.len(), 17);
    }
}
