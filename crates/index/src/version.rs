//! The version of what searches see.
//!
//! It changes whenever a search could give another answer: a commit that
//! changed documents, or a new generation. It starts at a random value, so
//! two processes never share one. A cached answer computed at the current
//! version is exactly what a search would compute now, at any age; that is
//! what lets the answer cache keep hot answers while nothing changes and
//! drop them the moment something does.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A cheap, cloneable handle: the mirror moves it, the cache reads it.
#[derive(Clone, Debug)]
pub struct Version(Arc<AtomicI64>);

impl Default for Version {
    fn default() -> Version {
        Version(Arc::new(AtomicI64::new(
            (rand::random::<u64>() >> 2) as i64,
        )))
    }
}

impl Version {
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Acquire)
    }

    /// Records that what searches see has changed.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}
