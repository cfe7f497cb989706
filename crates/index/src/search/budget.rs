//! How a search stops: a deadline, and a flag its request drops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::IndexError;

/// Matches a scan visits between two looks at its [`Budget`]: a look is
/// an atomic load and a clock read, a match is tens of nanoseconds.
pub(super) const BUDGET_EVERY_MATCHES: u32 = 4096;

/// When a search must stop: the request that wanted it is gone, or its
/// deadline passed. Cloned into the blocking task; the request side keeps
/// a [`StopOnDrop`], so a future dropped by a timeout or by a client that
/// hung up stops the work it started.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Budget {
    /// No deadline; stops only when told to.
    pub fn unlimited() -> Budget {
        Budget::default()
    }

    pub fn until(deadline: Instant) -> Budget {
        Budget {
            stop: Arc::default(),
            deadline: Some(deadline),
        }
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// A guard that stops the search when dropped, unless disarmed.
    pub fn stop_on_drop(&self) -> StopOnDrop {
        StopOnDrop(Some(self.clone()))
    }

    pub(super) fn exhausted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    pub(super) fn check(&self) -> std::result::Result<(), ScanError> {
        if self.exhausted() {
            Err(ScanError::Stopped)
        } else {
            Ok(())
        }
    }
}

/// Stops its search when dropped; [`StopOnDrop::disarm`] once the answer
/// is in.
pub struct StopOnDrop(Option<Budget>);

impl StopOnDrop {
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(budget) = &self.0 {
            budget.stop();
        }
    }
}

/// Why a scan gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// Its budget ran out: the deadline passed or nobody waits for it.
    #[error("the search was stopped: its deadline passed or its client left")]
    Stopped,
    #[error(transparent)]
    Index(#[from] IndexError),
}

impl From<tantivy::TantivyError> for ScanError {
    fn from(e: tantivy::TantivyError) -> ScanError {
        ScanError::Index(e.into())
    }
}
