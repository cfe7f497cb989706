//! The mirror flow: MySQL → outbox → indexer → index, and full rebuilds.

pub mod indexer;
pub mod reindex;
pub mod verify;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// What the indexer has done, shared with the API (watermarks, readiness).
#[derive(Debug, Default)]
pub struct Progress {
    /// Every outbox change up to here is visible to searches.
    applied_seq: AtomicI64,
    /// When the last batch became visible, in epoch milliseconds.
    last_commit_ms: AtomicI64,
    /// Set when the last attempt to read the outbox failed.
    failing: std::sync::atomic::AtomicBool,
}

impl Progress {
    pub fn applied_seq(&self) -> i64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    pub fn last_commit_ms(&self) -> i64 {
        self.last_commit_ms.load(Ordering::Acquire)
    }

    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }

    /// Records that every change up to `seq` is visible to searches.
    pub fn committed(&self, seq: i64) {
        self.applied_seq.store(seq, Ordering::Release);
        self.last_commit_ms
            .store(crate::db::now_ms(), Ordering::Release);
    }

    fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::Release);
    }
}

/// Handles the API uses to nudge and watch the indexer.
#[derive(Clone, Debug, Default)]
pub struct MirrorHandle {
    /// Wakes the indexer right after a local write instead of at its next poll.
    pub wake: Arc<Notify>,
    pub progress: Arc<Progress>,
}
