//! Faults a test makes one generation suffer on purpose, compiled only with
//! the `faults` feature (the integration tests turn it on; no served build
//! has it).
//!
//! A fault test must see the fault before anything could heal it, so the
//! fault is injected at the exact step under test rather than provoked
//! from outside (a corrupted file is read at open, not at the step).

use std::sync::atomic::{AtomicU32, Ordering};

use crate::{IndexError, Result};

/// What is armed to fail next.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Reloads to fail after the reader reloaded and before searches see
    /// it: the commit is made, the view is not refreshed.
    reloads: AtomicU32,
}

impl Faults {
    pub(crate) fn fail_reloads(&self, n: u32) {
        self.reloads.store(n, Ordering::SeqCst);
    }

    pub(crate) fn reloads_left(&self) -> u32 {
        self.reloads.load(Ordering::SeqCst)
    }

    /// Fails if a reload failure is armed, and disarms one.
    pub(crate) fn reload(&self) -> Result<()> {
        let armed = self
            .reloads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        match armed {
            Ok(_) => Err(IndexError::invalid("injected reload failure".to_owned())),
            Err(_) => Ok(()),
        }
    }
}
