//! The checkpoint: what a generation has applied of the outbox, written in
//! the same commit as the documents it describes.

use serde::{Deserialize, Serialize};
use tantivy::Index;

use crate::{IndexError, Result};

/// What an index commit has applied of the outbox, stored as the commit
/// payload (tantivy keeps it in `meta.json` and never reads it), so it is
/// written atomically with the documents it describes.
///
/// Every outbox id at or below `outbox_seq` is applied, except the ids in
/// `gaps`; every id in `(outbox_seq, high]` is applied except those in
/// `gaps` too. A gap is an id some transaction allocated and had not
/// committed when a higher id was read: it is kept, and re-read, until it
/// appears or is known never to (see `mirror::indexer`). Older payloads hold
/// only `outbox_seq`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub outbox_seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<i64>,
    /// `created_at` of the outbox row at `high`: a restored database that
    /// reuses the id has another one there (see `mirror::indexer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<GapRange>,
}

/// Outbox ids `first..=last` not seen yet. `late`: past the grace period,
/// so the recorded position has moved past them, but they are still re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapRange {
    pub first: i64,
    pub last: i64,
    #[serde(default)]
    pub late: bool,
}

impl Checkpoint {
    /// A position with nothing pending: every id up to `seq` applied.
    pub fn at(seq: i64) -> Checkpoint {
        Checkpoint {
            outbox_seq: seq,
            ..Checkpoint::default()
        }
    }

    /// Every outbox row this checkpoint could still need to read is above
    /// this: below the position and below every gap, late ones included.
    /// Pruning must never pass it.
    pub fn low_water(&self) -> i64 {
        let below_gaps = self.gaps.iter().map(|g| g.first - 1).min();
        below_gaps.map_or(self.outbox_seq, |g| g.min(self.outbox_seq))
    }
}

pub(crate) fn read_checkpoint(index: &Index) -> Result<Checkpoint> {
    let metas = index.load_metas()?;
    match metas.payload.as_deref() {
        None => Ok(Checkpoint::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| IndexError::invalid(format!("bad commit payload {text:?}: {e}"))),
    }
}
