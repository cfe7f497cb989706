//! Turns: a few searches run at once, the rest wait in line, and past a
//! bounded line a search is refused at once.
//!
//! A search is CPU work on the blocking pool and on rayon's threads, one
//! per core. Started all at once, a hundred searches share two cores
//! thread by thread and job by job on rayon's pool, and at 1M rows
//! never-seen queries at 100 connections had a p99 of 1–2 s and a max of
//! 4 s beside a p50 of 80 ms. Given turns in arrival order (tokio's
//! semaphore is fair), a search waits for the searches ahead of it and
//! then has the cores: its latency is the line plus its own cost, the
//! same line for cheap and expensive ones. With 8 turns on 2 cores the
//! same run kept its throughput, with a p99 of 0.3 s and a max of 0.4 s
//! (docs/benchmarks/026-search-turns-and-shedding.md).
//!
//! The line is bounded. A search that would wait behind `max_waiting`
//! others is refused at once with [`SearchError::Overloaded`] (a 503 with
//! `Retry-After`), instead of holding a connection and an in-flight slot
//! for seconds only to time out: under overload the server answers what
//! it can in a bounded time and sheds the rest.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{Result, SearchError};

/// A fair semaphore with a bounded line of waiters.
pub struct Turns {
    turns: Arc<Semaphore>,
    /// How many turns there are.
    size: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    /// The `lane` label of `searches_shed_total`.
    name: &'static str,
}

impl Turns {
    /// `turns` at once (at least one), and up to `max_waiting` waiting.
    pub fn new(name: &'static str, turns: usize, max_waiting: usize) -> Turns {
        Turns {
            turns: Arc::new(Semaphore::new(turns.max(1))),
            size: turns.max(1),
            waiting: AtomicUsize::new(0),
            max_waiting,
            name,
        }
    }

    /// A turn, once the searches ahead have had theirs; refused at once
    /// when `max_waiting` already wait. Dropping the future leaves the
    /// line.
    pub async fn enter(&self) -> Result<OwnedSemaphorePermit> {
        if let Ok(turn) = self.turns.clone().try_acquire_owned() {
            return Ok(turn);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            metrics::counter!("searches_shed_total", "lane" => self.name).increment(1);
            return Err(SearchError::Overloaded);
        }
        /// Leaves the line when the wait ends, or when the waiting request
        /// is dropped (its client hung up, or it timed out).
        struct Waiting<'a>(&'a AtomicUsize);
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
    pub fn try_enter(&self) -> Option<OwnedSemaphorePermit> {
        self.turns.clone().try_acquire_owned().ok()
    }

    /// Takes a turn and keeps it until dropped: for tests that need the
    /// turns taken.
    pub async fn hold(&self) -> OwnedSemaphorePermit {
        self.turns
            .clone()
            .acquire_owned()
            .await
            .expect("turns are never closed")
    }

    /// How many turns are taken now.
    pub fn taken(&self) -> usize {
        self.size - self.turns.available_permits()
    }

    /// Searches waiting for a turn now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Turns go in arrival order, and a search past the line's bound is
    /// refused at once while the ones in line keep their places.
    #[tokio::test]
    async fn turns_go_in_order_and_a_full_line_refuses_at_once() {
        let turns = Arc::new(Turns::new("test", 1, 2));
        assert_eq!(turns.taken(), 0);
        let held = turns.hold().await;
        assert_eq!(turns.taken(), 1);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..2 {
            let (line, order) = (turns.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let _turn = line.enter().await.unwrap();
                order.lock().unwrap().push(i);
            }));
            // Each joins the line before the next one does.
            while turns.waiting() <= i {
                tokio::task::yield_now().await;
            }
        }
        assert!(matches!(turns.enter().await, Err(SearchError::Overloaded)));
        assert_eq!(turns.waiting(), 2, "the refused one did not stay in line");
        drop(held);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1]);
        assert_eq!(turns.waiting(), 0);
        assert_eq!(turns.taken(), 0, "every turn was given back");
        assert!(turns.try_enter().is_some());
    }

    /// A request dropped while it waits (a timeout, a client gone) leaves
    /// the line, so that it does not count against the bound forever.
    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_line() {
        let turns = Arc::new(Turns::new("test", 1, 1));
        let held = turns.hold().await;
        let waiter = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.enter().await.map(drop) })
        };
        while turns.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(turns.waiting(), 0);
        drop(held);
        assert!(turns.enter().await.is_ok());
    }
}
