//! The transaction being read: its GTID, the changes kept so far, and the
//! statements it ran on followed tables.
//!
//! A transaction's changes are passed on only at its commit, because one
//! the server rolls back must yield nothing. (InnoDB writes nothing to the
//! log for a rolled-back transaction, but a mixed one with MyISAM rows
//! ends in `ROLLBACK` with those rows kept, so even then they are passed
//! on.) Past `max_changes` the kept changes leave early as a partial
//! batch, so that memory stays bounded whatever the transaction's size.

use crate::cursor::PendingGtid;
use crate::ddl::DdlKind;

#[derive(Debug)]
pub(crate) struct Group<T> {
    /// Inside a transaction: after `BEGIN`, or a MariaDB GTID event that
    /// is not standalone. A statement outside one is its own transaction.
    pub(crate) open: bool,
    pub(crate) gtid: PendingGtid,
    changes: Vec<T>,
    /// A partial batch of this transaction was passed on.
    partial_sent: bool,
    /// Followed tables changed by statements: (table index, schema, table, kind).
    statements: Vec<(usize, String, String, DdlKind)>,
}

/// What a transaction leaves at its commit.
#[derive(Debug)]
pub(crate) struct Ended<T> {
    pub(crate) changes: Vec<T>,
    /// Whether the caller must hear of the commit even with no changes
    /// left: it was sent partial batches, and needs the final position.
    pub(crate) partial_sent: bool,
    pub(crate) statements: Vec<(usize, String, String, DdlKind)>,
}

impl<T> Group<T> {
    pub(crate) fn new() -> Group<T> {
        Group {
            open: false,
            gtid: PendingGtid::None,
            changes: Vec::new(),
            partial_sent: false,
            statements: Vec::new(),
        }
    }

    /// Whether the group has read anything that a commit must pass on.
    pub(crate) fn has_content(&self) -> bool {
        !self.changes.is_empty() || self.partial_sent || !self.statements.is_empty()
    }

    /// Keeps one change. When `max_changes` are already held, they leave
    /// first, as the batch to pass on now: so the last batch of a
    /// transaction is never empty, and leaves with the commit.
    pub(crate) fn push(&mut self, change: T, max_changes: usize) -> Option<Vec<T>> {
        let mut full = None;
        if self.changes.len() >= max_changes.max(1) {
            self.partial_sent = true;
            full = Some(std::mem::take(&mut self.changes));
        }
        self.changes.push(change);
        full
    }

    pub(crate) fn statement(&mut self, index: usize, schema: String, table: String, kind: DdlKind) {
        self.statements.push((index, schema, table, kind));
    }

    /// Ends the transaction: what it leaves, and the group ready for the next.
    pub(crate) fn end(&mut self) -> Ended<T> {
        let ended = Ended {
            changes: std::mem::take(&mut self.changes),
            partial_sent: self.partial_sent,
            statements: std::mem::take(&mut self.statements),
        };
        self.reset();
        ended
    }

    /// Forgets the transaction (the connection was lost in its middle: it
    /// is read again from its start).
    pub(crate) fn reset(&mut self) {
        self.open = false;
        self.gtid = PendingGtid::None;
        self.changes.clear();
        self.partial_sent = false;
        self.statements.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_leave_at_the_bound_and_the_rest_at_the_end() {
        let mut group = Group::new();
        let mut batches = Vec::new();
        for i in 0..7 {
            if let Some(batch) = group.push(i, 3) {
                batches.push(batch);
            }
        }
        assert_eq!(batches, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        let ended = group.end();
        assert_eq!(ended.changes, vec![6]);
        assert!(ended.partial_sent);
        assert!(!group.has_content(), "the next transaction starts empty");
    }

    #[test]
    fn an_exact_multiple_leaves_its_last_batch_with_the_commit() {
        let mut group = Group::new();
        assert!(group.push(1, 2).is_none());
        assert!(group.push(2, 2).is_none());
        assert_eq!(group.push(3, 2), Some(vec![1, 2]));
        assert!(group.push(4, 2).is_none());
        let ended = group.end();
        assert_eq!(ended.changes, vec![3, 4]);
        assert!(ended.partial_sent);
    }

    #[test]
    fn reset_forgets_everything() {
        let mut group = Group::new();
        group.open = true;
        group.push(1, 10);
        group.statement(0, "s".to_owned(), "t".to_owned(), DdlKind::Truncate);
        group.reset();
        assert!(!group.open);
        assert!(!group.has_content());
    }
}
