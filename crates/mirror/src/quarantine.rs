//! Rows that cannot be read, kept aside so that the rest go on.
//!
//! A row whose key is not valid UTF-8 cannot be named in the index (see
//! `chaja_store::rows`, "A row that cannot be read"). The indexer does not
//! stop for it: it is left out of the index (an older version of it is
//! deleted, so nothing stale stays searchable), logged with its source and
//! key, counted in `/metrics`, and listed here for `/api/admin/status` and
//! the console. `verify` reports such rows too, and `reindex` skips and
//! lists them. Once the row is fixed (its key rewritten), its next change
//! or `verify --repair` indexes it, and it leaves the list.
//!
//! The list is this process's: what its indexer met since it started, at
//! most [`MAX_ROWS`] entries (memory is bounded whatever the tables hold;
//! the count goes on past it). A `verify` run replaces it with what it
//! found, since it reads every row.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Entries kept at most.
pub const MAX_ROWS: usize = 1_000;

/// One row kept out of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct QuarantinedRow {
    /// The source's name.
    pub source: String,
    /// The key as far as it reads (invalid bytes as U+FFFD).
    pub key: String,
    pub reason: String,
    /// When it was last met, in epoch milliseconds.
    pub at_ms: i64,
}

#[derive(Debug, Default)]
struct Rows {
    by_key: BTreeMap<(String, String), QuarantinedRow>,
    /// Every row ever put aside, past `MAX_ROWS` too.
    total: u64,
}

/// Cheap to clone; shared by the indexer and the API.
#[derive(Debug, Clone, Default)]
pub struct Quarantine(Arc<Mutex<Rows>>);

impl Quarantine {
    /// Puts a row aside (again), logging it.
    pub fn record(&self, source: &str, key: &str, reason: &str) {
        tracing::warn!(
            source,
            key,
            reason,
            "a row cannot be read; left out of the index"
        );
        metrics::counter!("rows_quarantined_total").increment(1);
        let mut rows = self.0.lock().expect("quarantine lock");
        rows.total += 1;
        let id = (source.to_owned(), key.to_owned());
        if rows.by_key.len() < MAX_ROWS || rows.by_key.contains_key(&id) {
            rows.by_key.insert(
                id,
                QuarantinedRow {
                    source: source.to_owned(),
                    key: key.to_owned(),
                    reason: reason.to_owned(),
                    at_ms: chaja_core::clock::now_ms(),
                },
            );
        }
        metrics::gauge!("rows_quarantined").set(rows.by_key.len() as f64);
    }

    /// The row was read (or found gone) since: it is no longer aside.
    pub fn release(&self, source: &str, key: &str) {
        let mut rows = self.0.lock().expect("quarantine lock");
        if rows.by_key.is_empty() {
            return;
        }
        rows.by_key.remove(&(source.to_owned(), key.to_owned()));
        metrics::gauge!("rows_quarantined").set(rows.by_key.len() as f64);
    }

    /// Replaces the list with what a full pass over the tables found.
    pub fn replace(&self, found: &[QuarantinedRow]) {
        let mut rows = self.0.lock().expect("quarantine lock");
        rows.by_key = found
            .iter()
            .take(MAX_ROWS)
            .map(|row| ((row.source.clone(), row.key.clone()), row.clone()))
            .collect();
        metrics::gauge!("rows_quarantined").set(rows.by_key.len() as f64);
    }

    /// The rows aside now, by source and key.
    pub fn rows(&self) -> Vec<QuarantinedRow> {
        let rows = self.0.lock().expect("quarantine lock");
        rows.by_key.values().cloned().collect()
    }

    /// Rows put aside since start, counting each meeting.
    pub fn total(&self) -> u64 {
        self.0.lock().expect("quarantine lock").total
    }
}
