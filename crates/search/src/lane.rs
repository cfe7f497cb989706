//! The heavy lane: searches no cache helps take turns for a few cores.
//!
//! A search box sends first pages, which the cache answers and which stop
//! early on a newest-first index. A time filter, a deep page or a cursor
//! in another order may read every match and is rarely cached; a client
//! varying them could otherwise take every core. Such searches wait in a
//! lane of `CHAJA_HEAVY_SEARCHES` turns with a bounded queue.

use std::sync::Arc;

use chaja_index::search::{Request, Sort};

use crate::{Result, SearchError};

/// Searches that a cache rarely answers and that may read every match:
/// a time filter (each `from`/`to` pair is its own cache key and its own
/// totals), or a page past the first (never cached). They are legitimate,
/// but a client varying them gets no help from any cache, so they run in a
/// lane of their own, `CHAJA_HEAVY_SEARCHES` at a time, and cannot take
/// every core from the searches a search box sends. Cursor pages in any
/// order but newest first are heavy too (they cannot stop early); newest-
/// first cursor pages stop early like first pages.
pub fn is_heavy(request: &Request) -> bool {
    request.filter.from.is_some()
        || request.filter.to.is_some()
        || request.offset > 0
        || (request.after.is_some() && request.sort != Sort::Recent)
}

/// The lane heavy searches take turns in, with a bounded queue: past
/// `max_waiting` waiters a heavy search is refused at once (503) rather
/// than holding one of the server's in-flight slots while it waits.
pub struct HeavyLane {
    turns: Arc<tokio::sync::Semaphore>,
    waiting: std::sync::atomic::AtomicUsize,
    max_waiting: usize,
}

impl HeavyLane {
    pub fn new(turns: usize) -> HeavyLane {
        HeavyLane {
            turns: Arc::new(tokio::sync::Semaphore::new(turns.max(1))),
            waiting: Default::default(),
            max_waiting: 16 * turns.max(1),
        }
    }

    /// A turn, once one is free; refused when too many already wait.
    pub async fn enter(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        use std::sync::atomic::Ordering;
        if let Ok(turn) = self.turns.clone().try_acquire_owned() {
            return Ok(turn);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(SearchError::Overloaded);
        }
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _waiting = Waiting(&self.waiting);
        self.turns
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SearchError::Overloaded)
    }

    /// A turn if one is free now, for optional work.
    pub fn try_enter(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.turns.clone().try_acquire_owned().ok()
    }

    /// Takes a turn and keeps it until dropped: for tests that need the
    /// lane busy.
    pub async fn hold(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.turns
            .clone()
            .acquire_owned()
            .await
            .expect("the lane is never closed")
    }
}
