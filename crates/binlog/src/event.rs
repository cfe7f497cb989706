//! What a reader yields: transactions of row changes, statements that
//! changed a followed table without rows, and heartbeats.
//!
//! Every event carries a position that is safe to store: resuming from
//! it neither skips nor (beyond what a partial batch says) repeats.

use std::time::SystemTime;

use crate::ddl::DdlKind;
use crate::position::Position;

/// One thing the log said.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<T> {
    Transaction(Transaction<T>),
    Ddl(Ddl),
    Heartbeat(Heartbeat),
}

/// The kept changes of one committed transaction, in log order, or a
/// batch of a transaction too large to hold whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction<T> {
    /// What the projection kept of each row change of a followed table.
    pub changes: Vec<T>,
    /// `complete`: just after this transaction. A partial batch: the
    /// position of the *previous* commit, because resuming after a crash
    /// must replay this transaction from its start; applying a batch
    /// again is harmless to a caller that re-reads rows by key.
    pub position: Position,
    /// false: a batch of a transaction with more than
    /// `Settings::max_changes` kept changes; more batches follow, and the
    /// last one, with `complete`, carries the transaction's position.
    pub complete: bool,
    /// When the server wrote the commit (for a partial batch: the last
    /// event read), by the server's clock, to the second.
    pub timestamp: SystemTime,
    /// How far the reader is behind the server, in seconds: now minus
    /// `timestamp` (0 when the server's clock is ahead).
    pub seconds_behind: u64,
}

/// A statement that changed a followed table without row events.
#[derive(Debug, Clone, PartialEq)]
pub struct Ddl {
    pub schema: String,
    pub table: String,
    /// The table's index in `Settings::tables`.
    pub index: usize,
    pub kind: DdlKind,
    /// Just after the statement's transaction.
    pub position: Position,
}

/// The reader is alive, at `position`, with nothing to pass on: sent when
/// the server is idle (its heartbeat), and at least every
/// `Settings::heartbeat` while the log moves with changes to other tables
/// only, so the caller can store the position and report the lag even
/// when none of its tables change.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub position: Position,
    pub seconds_behind: u64,
    /// The server's own heartbeat: it has sent everything it had, so the
    /// reader has read the whole log (a catching-up rebuild is done).
    pub caught_up: bool,
}
