//! The mirror flow: MySQL → outbox → indexer → index, and full rebuilds.

mod error;
pub mod health;
pub mod indexer;
pub mod quarantine;
pub mod reindex;
pub mod stages;
pub mod verify;

pub use error::MirrorError;

pub type Result<T, E = MirrorError> = std::result::Result<T, E>;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chaja_index::Version;
use tokio::sync::Notify;

/// The window the applied rate is measured over.
pub const RATE_WINDOW_MS: i64 = 10_000;

/// An indexer that has not finished a loop for this long is stuck: a
/// round is at most one batch, and rebuilds run beside the loop.
pub const STUCK_AFTER: Duration = Duration::from_secs(30);

/// What the indexer has done, shared with the API (cache versions,
/// readiness).
#[derive(Debug)]
pub struct Progress {
    /// Every outbox change up to here is visible to searches, except gaps
    /// past their grace period, which are still re-read.
    applied_seq: AtomicI64,
    /// The newest outbox id applied. Ids between `applied_seq` and here
    /// are applied too, except gaps: ids of transactions still open (or
    /// rolled back), whose rows come when they commit.
    newest_seq: AtomicI64,
    /// When the last batch became visible, in epoch milliseconds.
    last_commit_ms: AtomicI64,
    /// Changes whenever what searches see changes (see [`Version`]).
    version: Version,
    /// When the indexer last went round its loop, in epoch milliseconds.
    last_tick_ms: AtomicI64,
    /// Set when the last attempt to read the outbox failed.
    failing: AtomicBool,
    /// Set when the indexer task has ended, by error or panic.
    stopped: AtomicBool,
    /// Set when the outbox was found rewound, until a rebuild is live.
    rewound: AtomicBool,
    /// Set when this replica was found behind the prune point (it was away
    /// longer than the retention window, or is new): changes it never read
    /// are gone from the outbox, so its index misses them until a rebuild
    /// is live.
    behind_pruned: AtomicBool,
    /// Changes applied (documents written or deleted) in the last few
    /// seconds, for the rate `/metrics` and the console show.
    applied_rows: Mutex<std::collections::VecDeque<(i64, u64)>>,
    /// Set once housekeeping has compared this replica's position with the
    /// outbox (rewound? behind the prune point?): until then nobody knows
    /// whether its index can be served.
    checked: AtomicBool,
    /// Set when the server is shutting down and draining: it still
    /// answers, but a balancer should send new requests elsewhere.
    draining: AtomicBool,
    /// Set while the live index is being read into the page cache after a
    /// start (see `index::warm`): not ready until then.
    warming: AtomicBool,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress {
            applied_seq: AtomicI64::new(0),
            newest_seq: AtomicI64::new(0),
            last_commit_ms: AtomicI64::new(0),
            version: Version::default(),
            last_tick_ms: AtomicI64::new(chaja_core::clock::now_ms()),
            failing: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            rewound: AtomicBool::new(false),
            behind_pruned: AtomicBool::new(false),
            checked: AtomicBool::new(false),
            applied_rows: Mutex::default(),
            draining: AtomicBool::new(false),
            warming: AtomicBool::new(false),
        }
    }
}

impl Progress {
    pub fn applied_seq(&self) -> i64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    /// Where the indexer's backlog starts: the outbox rows past this are
    /// ones it has not read. Rows past `applied_seq` but below the newest
    /// applied id are applied already (only a transaction held open keeps
    /// `applied_seq` below them), so they are no lag.
    pub fn unread_after(&self) -> i64 {
        self.applied_seq()
            .max(self.newest_seq.load(Ordering::Acquire))
    }

    pub fn last_commit_ms(&self) -> i64 {
        self.last_commit_ms.load(Ordering::Acquire)
    }

    /// The version of what searches see (see the field).
    pub fn version(&self) -> i64 {
        self.version.get()
    }

    /// A handle on the version, for readers such as the answer cache.
    pub fn version_handle(&self) -> Version {
        self.version.clone()
    }

    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub fn is_rewound(&self) -> bool {
        self.rewound.load(Ordering::Acquire)
    }

    pub fn is_behind_pruned(&self) -> bool {
        self.behind_pruned.load(Ordering::Acquire)
    }

    /// Records `rows` changes applied by a commit now.
    pub fn applied(&self, rows: u64) {
        let now = chaja_core::clock::now_ms();
        let mut window = self.applied_rows.lock().expect("throughput lock");
        window.push_back((now, rows));
        while window
            .front()
            .is_some_and(|(at, _)| now - at > RATE_WINDOW_MS)
        {
            window.pop_front();
        }
    }

    /// Changes applied per second over the last [`RATE_WINDOW_MS`].
    pub fn applied_per_second(&self) -> f64 {
        let now = chaja_core::clock::now_ms();
        let window = self.applied_rows.lock().expect("throughput lock");
        let rows: u64 = window
            .iter()
            .filter(|(at, _)| now - at <= RATE_WINDOW_MS)
            .map(|(_, n)| n)
            .sum();
        rows as f64 * 1000.0 / RATE_WINDOW_MS as f64
    }

    /// Whether housekeeping has checked the position once (see the field).
    pub fn is_checked(&self) -> bool {
        self.checked.load(Ordering::Acquire)
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub fn is_warming(&self) -> bool {
        self.warming.load(Ordering::Acquire)
    }

    /// Marks the index as being warmed, or done (see the field).
    pub fn set_warming(&self, warming: bool) {
        self.warming.store(warming, Ordering::Release);
    }

    /// Marks the server as shutting down (see the field).
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// How long ago the indexer last went round its loop.
    pub fn since_tick(&self) -> Duration {
        let ms = chaja_core::clock::now_ms() - self.last_tick_ms.load(Ordering::Acquire);
        Duration::from_millis(ms.max(0) as u64)
    }

    /// Records the position every change up to which is visible.
    pub fn committed(&self, seq: i64) {
        self.committed_up_to(seq, seq);
    }

    /// Records the position every change up to which is visible, and the
    /// newest id applied past it (see `unread_after`).
    pub fn committed_up_to(&self, seq: i64, newest: i64) {
        self.applied_seq.store(seq, Ordering::Release);
        self.newest_seq.store(newest, Ordering::Release);
        self.last_commit_ms
            .store(chaja_core::clock::now_ms(), Ordering::Release);
    }

    /// Records that what searches see has changed.
    pub fn changed(&self) {
        self.version.bump();
    }

    fn tick(&self) {
        self.last_tick_ms
            .store(chaja_core::clock::now_ms(), Ordering::Release);
    }

    fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::Release);
    }

    fn set_rewound(&self, rewound: bool) {
        self.rewound.store(rewound, Ordering::Release);
    }

    fn set_behind_pruned(&self, behind: bool) {
        self.behind_pruned.store(behind, Ordering::Release);
    }

    fn set_checked(&self) {
        self.checked.store(true, Ordering::Release);
    }
}

/// Marks the indexer stopped when dropped: on return, on error and while
/// unwinding from a panic, so `/readyz` never reports a dead indexer ready.
struct Running(Arc<Progress>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::Release);
    }
}

/// Handles the API uses to nudge and watch the indexer.
#[derive(Clone, Debug, Default)]
pub struct MirrorHandle {
    /// Wakes the indexer right after a local write instead of at its next poll.
    pub wake: Arc<Notify>,
    pub progress: Arc<Progress>,
    /// The database as the background check last found it; probes read
    /// this instead of taking a connection.
    pub health: health::Health,
    /// Rows the indexer could not read, kept out of the index.
    pub quarantine: quarantine::Quarantine,
}
