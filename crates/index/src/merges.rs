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
//!
//! # Merges wait out a burst
//!
//! A burst of text edits commits a segment of documents every indexer
//! round (2,000 rows), and the log policy merged each 8 of them while the
//! burst went on: during 10,000 edits on a 100k board the merge thread
//! took a third of the server's CPU, on a machine whose two cores the
//! indexing thread and the analysis already fill. So while the indexer
//! says more is waiting ([`MergeHold`]), small segments of documents are
//! not merged, up to [`HELD_SEGMENTS`] of them; the round that empties
//! the backlog lifts the hold, and its commit merges what gathered (tantivy
//! looks for merges at each commit; a burst that ends on a full round
//! commits once more, with nothing in it, for that). A merge is put off,
//! never skipped, and never for long: the burst's last round, or the cap,
//! lets it run.
//!
//! # A rebuild's segments are sealed
//!
//! A rebuild gives each indexing thread a large budget and merges nothing
//! while it writes (see `Generation::writer_with_threads`), so its
//! segments come out alike: ten of about 90,000 rows and two partial ones
//! at 1M rows. The log policy puts segments of about one size in one level
//! and merges a level of 8 or more whole, so the serving writer's first
//! commit after a swap would rewrite nearly every row in the background.
//! [`publish`](crate::publish) lists the rebuild's segments in the
//! generation's `sealed` file, and the serving writer never merges them:
//! they are as large as a rebuild makes segments, and the next rebuild
//! replaces them. Segments written while serving merge among themselves.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The file in a generation's directory that lists its sealed segments,
/// one id a line.
const SEALED_FILE: &str = "sealed";

/// Lists the segments of the generation in `dir` as sealed (see the
/// module docs). Blocking.
pub(crate) fn seal(dir: &Path) -> crate::Result<()> {
    let index = tantivy::Index::open_in_dir(dir)?;
    let ids: String = index
        .searchable_segment_ids()?
        .iter()
        .map(|id| format!("{}\n", id.uuid_string()))
        .collect();
    std::fs::write(dir.join(SEALED_FILE), ids)?;
    Ok(())
}

/// The sealed segments of the generation in `dir`: none when it has no
/// `sealed` file (one the server created, or an older rebuild's). A file
/// that cannot be read seals nothing: it only saves merges, and is no
/// reason to refuse the generation.
pub(crate) fn sealed(dir: &Path) -> HashSet<SegmentId> {
    let text = match std::fs::read_to_string(dir.join(SEALED_FILE)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return HashSet::new(),
        Err(e) => {
            tracing::warn!(error = %e, "unreadable list of sealed segments; sealing none");
            return HashSet::new();
        }
    };
    let ids: Result<HashSet<SegmentId>, _> = text
        .lines()
        .map(|line| SegmentId::from_uuid_string(line.trim()))
        .collect();
    ids.unwrap_or_else(|e| {
        tracing::warn!(error = ?e, "unreadable list of sealed segments; sealing none");
        HashSet::new()
    })
}

/// Small segments of documents (under tantivy's smallest level, 10,000
/// documents) a burst may leave unmerged: a few dozen more segments cost
/// each search little, and past this they are merged during it, too.
pub(crate) const HELD_SEGMENTS: usize = 24;
/// tantivy's `LogMergePolicy` default smallest level (not exported).
const SMALLEST_LEVEL: u32 = 10_000;

/// Whether the indexer is in a burst (its last batch was full): merges of
/// small segments of documents wait (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct MergeHold(Arc<AtomicBool>);

impl MergeHold {
    /// Returns whether merges were held before.
    pub(crate) fn set(&self, held: bool) -> bool {
        self.0.swap(held, Ordering::Relaxed)
    }

    fn is_held(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
pub(crate) struct ApartMergePolicy {
    documents: LogMergePolicy,
    patches: LogMergePolicy,
    kinds: Arc<RwLock<SegmentKinds>>,
    hold: MergeHold,
    /// The rebuild's segments, never merged (see the module docs).
    sealed: Arc<HashSet<SegmentId>>,
}

impl ApartMergePolicy {
    pub(crate) fn new(
        kinds: Arc<RwLock<SegmentKinds>>,
        hold: MergeHold,
        sealed: Arc<HashSet<SegmentId>>,
    ) -> ApartMergePolicy {
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
            hold,
            sealed,
        }
    }
}

impl MergePolicy for ApartMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let kinds = self.kinds.read().expect("segment kinds lock poisoned");
        let (patches, documents): (Vec<SegmentMeta>, Vec<SegmentMeta>) = segments
            .iter()
            .filter(|s| kinds.known.contains(&s.id()) && !self.sealed.contains(&s.id()))
            .cloned()
            .partition(|s| kinds.patches_only.contains(&s.id()));
        let small = documents
            .iter()
            .filter(|s| s.num_docs() < SMALLEST_LEVEL)
            .count();
        let mut candidates = if self.hold.is_held() && small < HELD_SEGMENTS {
            Vec::new()
        } else {
            self.documents.compute_merge_candidates(&documents)
        };
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
        let policy = ApartMergePolicy::new(
            Arc::new(RwLock::new(kinds)),
            MergeHold::default(),
            Default::default(),
        );
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
        let policy = ApartMergePolicy::new(
            Arc::new(RwLock::new(kinds)),
            MergeHold::default(),
            Default::default(),
        );
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

    /// A rebuild's ten alike segments, which tantivy's log policy merges
    /// whole, are never merged once sealed; eight small segments written
    /// while serving still merge among themselves.
    #[test]
    fn sealed_segments_are_never_merged() {
        let index = tantivy::Index::create_in_ram(crate::schema::build_schema());
        let meta = |docs| index.new_segment_meta(SegmentId::generate_random(), docs);
        let rebuilt: Vec<SegmentMeta> = (0..10).map(|i| meta(90_000 + i * 300)).collect();
        let served: Vec<SegmentMeta> = (0..8).map(|_| meta(2_000)).collect();
        let kinds = || {
            Arc::new(RwLock::new(SegmentKinds {
                known: rebuilt.iter().chain(&served).map(|s| s.id()).collect(),
                patches_only: HashSet::new(),
            }))
        };
        let mut all = rebuilt.clone();
        all.extend(served.iter().cloned());
        let unsealed = ApartMergePolicy::new(kinds(), MergeHold::default(), Default::default());
        let merged = unsealed.compute_merge_candidates(&all);
        assert!(
            merged.iter().any(|c| c.0.contains(&rebuilt[0].id())),
            "without the seal, the rebuild's segments are merged: {merged:?}"
        );
        let sealed = Arc::new(rebuilt.iter().map(|s| s.id()).collect());
        let policy = ApartMergePolicy::new(kinds(), MergeHold::default(), sealed);
        let merged: Vec<HashSet<SegmentId>> = policy
            .compute_merge_candidates(&all)
            .into_iter()
            .map(|c| c.0.into_iter().collect())
            .collect();
        let served: HashSet<SegmentId> = served.iter().map(|s| s.id()).collect();
        assert_eq!(merged, [served]);
    }

    /// A generation lists the segments it had when it was sealed, and
    /// reads them back; one never sealed has none.
    #[test]
    fn a_sealed_generation_reads_its_segments_back() {
        let dir = tempfile::tempdir().unwrap();
        assert!(sealed(dir.path()).is_empty(), "no file, none");
        let mut schema = tantivy::schema::Schema::builder();
        let n = schema.add_u64_field("n", tantivy::schema::INDEXED);
        let index = tantivy::Index::create_in_dir(dir.path(), schema.build()).unwrap();
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        for i in [1u64, 2] {
            writer.add_document(tantivy::doc!(n => i)).unwrap();
            writer.commit().unwrap();
        }
        drop(writer);
        seal(dir.path()).unwrap();
        let ids: HashSet<SegmentId> = index
            .searchable_segment_ids()
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(ids.len(), 2);
        assert_eq!(sealed(dir.path()), ids);
        std::fs::write(dir.path().join(SEALED_FILE), "not an id\n").unwrap();
        assert!(sealed(dir.path()).is_empty(), "unreadable, none");
    }

    /// During a burst, small segments of documents wait until the hold is
    /// lifted or they reach the cap; patches merge as before.
    #[test]
    fn a_burst_holds_merges_of_documents_up_to_the_cap() {
        let index = tantivy::Index::create_in_ram(crate::schema::build_schema());
        let meta = |docs| index.new_segment_meta(SegmentId::generate_random(), docs);
        let documents: Vec<SegmentMeta> = (0..8).map(|_| meta(2_000)).collect();
        let patches: Vec<SegmentMeta> = (0..8).map(|_| meta(100)).collect();
        let kinds = Arc::new(RwLock::new(SegmentKinds {
            known: documents.iter().chain(&patches).map(|s| s.id()).collect(),
            patches_only: patches.iter().map(|s| s.id()).collect(),
        }));
        let hold = MergeHold::default();
        let policy = ApartMergePolicy::new(kinds.clone(), hold.clone(), Default::default());
        let mut all = documents.clone();
        all.extend(patches.iter().cloned());
        hold.set(true);
        let held = policy.compute_merge_candidates(&all);
        assert_eq!(held.len(), 1, "only the patches merge: {held:?}");
        assert!(held[0]
            .0
            .iter()
            .all(|id| kinds.read().unwrap().patches_only.contains(id)));
        hold.set(false);
        assert_eq!(policy.compute_merge_candidates(&all).len(), 2);
        // At the cap, documents merge during a burst too.
        let more: Vec<SegmentMeta> = (0..HELD_SEGMENTS - 8).map(|_| meta(2_000)).collect();
        kinds
            .write()
            .unwrap()
            .known
            .extend(more.iter().map(|s| s.id()));
        all.extend(more);
        hold.set(true);
        assert_eq!(policy.compute_merge_candidates(&all).len(), 2);
    }
}
