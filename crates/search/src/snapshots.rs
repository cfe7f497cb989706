//! Points in time: the view a cursor walk's first page was computed on,
//! held so that every later page of the walk reads it.
//!
//! A cursor carries the rank of the last hit served, and the next page
//! takes the ranks below it. Read on the index as it is now, that skips or
//! repeats rows whose rank moved between pages: a post liked past the
//! cursor under `sort=attr.like_count.desc` is never shown, one liked less
//! shows twice; a text edit moves a row's relevance, and every new row
//! moves every idf. Elasticsearch's point in time answers this by holding
//! the searcher of the first page; so does this registry. Each answer
//! names the view it was computed on ([`SnapshotId`]), a cursor carries
//! it, and a page after a cursor runs on that view.
//!
//! A view is held while walks use it: it is dropped once no page has read
//! it for `keep_alive` (a walk that pauses longer gets a clear error, and
//! starts again), and at most [`MAX_SNAPSHOTS`] views are held, the least
//! recently read dropped first, so memory stays bounded whatever the
//! traffic. Views of one reload are one entry: walks begun between two
//! commits share it.

use std::sync::Arc;
use std::time::Duration;

use chaja_index::{Generation, View};

/// Views held at most. A held view keeps its segments' readers and
/// patches; the segments themselves are shared with the live view unless
/// merged away since.
pub const MAX_SNAPSHOTS: u64 = 1024;

/// Names a held view: the process, the generation and the reload, hashed,
/// so that a cursor issued by another process (another replica, or this
/// one before a restart) names nothing here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnapshotId(pub u64);

/// A generation and one view of it.
#[derive(Clone)]
pub struct Snapshot {
    pub generation: Arc<Generation>,
    pub view: Arc<View>,
}

/// The views walks read.
#[derive(Clone)]
pub struct Snapshots {
    held: moka::sync::Cache<SnapshotId, Snapshot>,
    /// Random per process: ids from another process never match.
    process: u64,
}

impl Snapshots {
    pub fn new(keep_alive: Duration) -> Snapshots {
        Snapshots {
            held: moka::sync::Cache::builder()
                .max_capacity(MAX_SNAPSHOTS)
                .time_to_idle(keep_alive)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .build(),
            process: rand::random(),
        }
    }

    /// Holds `view` of `generation` and names it.
    pub fn hold(&self, generation: &Arc<Generation>, view: &Arc<View>) -> SnapshotId {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&self.process.to_le_bytes());
        hasher.update(&generation.id.to_le_bytes());
        hasher.update(&view.reload_id().to_le_bytes());
        let bytes = hasher.finalize();
        let id = SnapshotId(u64::from_le_bytes(
            bytes.as_bytes()[..8].try_into().expect("8 bytes"),
        ));
        self.held.get_with(id, || Snapshot {
            generation: generation.clone(),
            view: view.clone(),
        });
        id
    }

    /// The view `id` names, if still held; reading it keeps it held for
    /// another `keep_alive`.
    pub fn get(&self, id: SnapshotId) -> Option<Snapshot> {
        self.held.get(&id)
    }

    /// Views held now.
    pub fn len(&self) -> u64 {
        self.held.run_pending_tasks();
        self.held.entry_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
