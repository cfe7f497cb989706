//! The committed position, moved only where resuming is exact.
//!
//! A reader that stops in the middle of a transaction must resume before
//! it, never after: so the position moves at a transaction's end (its
//! `XID`, its `COMMIT`, or the end of a statement outside any transaction,
//! such as DDL), and between transactions at a log rotation, where the
//! start of the new file is the same point as the end of the old one.
//! Free of I/O, so each rule is tested alone.

use crate::mariadb_gtid::MariaDbGtid;
use crate::position::Position;

/// The GTID of the transaction being read, added to the position at its end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum PendingGtid {
    #[default]
    None,
    MariaDb(MariaDbGtid),
    MySql {
        uuid: String,
        tag: String,
        gno: u64,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    committed: Position,
    /// The binlog file being read, from the last rotate event.
    file: Option<String>,
    /// Where the last event with a position ends (its `log_pos`). Events
    /// inside a MySQL compressed transaction have none; then this is the
    /// end of the compressed payload, which ends with the transaction.
    end: u64,
}

impl Cursor {
    pub(crate) fn new(from: Position) -> Cursor {
        let file = match &from {
            Position::File { file, .. } => Some(file.clone()),
            _ => None,
        };
        Cursor {
            committed: from,
            file,
            end: 0,
        }
    }

    /// The point just after the last transaction passed on.
    pub(crate) fn committed(&self) -> &Position {
        &self.committed
    }

    /// An event that ends at `log_pos` was read (0: it has no position).
    pub(crate) fn saw_event(&mut self, log_pos: u32) {
        if log_pos != 0 {
            self.end = u64::from(log_pos);
        }
    }

    /// The log continues in `file` at `offset`. At a real rotation between
    /// transactions (`moves_position`) a file-and-offset position moves
    /// there: it is the same point, and the old file may be purged long
    /// before the next commit. The server's artificial rotate at the start
    /// of a dump only names the file being read.
    pub(crate) fn rotate(&mut self, file: String, offset: u64, moves_position: bool) {
        self.file = Some(file.clone());
        self.end = offset;
        if !moves_position {
            return;
        }
        if let Position::File {
            file: old,
            offset: old_offset,
            ..
        } = &mut self.committed
        {
            *old = file;
            *old_offset = offset;
        }
    }

    /// A transaction ended with the last event read; `gtid` was its GTID.
    pub(crate) fn commit(&mut self, gtid: &PendingGtid) {
        match &mut self.committed {
            Position::File { file, offset, .. } => {
                if let Some(current) = &self.file {
                    file.clone_from(current);
                }
                *offset = self.end;
            }
            Position::MariaDbGtid { gtids, .. } => {
                // Every MariaDB event group has a GTID; one without (never
                // seen) leaves the position before it, which replays it
                // rather than skipping it.
                if let PendingGtid::MariaDb(gtid) = gtid {
                    gtids.set(*gtid);
                }
            }
            Position::MySqlGtid { executed, .. } => {
                if let PendingGtid::MySql { uuid, tag, gno } = gtid {
                    executed.add(uuid, tag, *gno);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::ServerIdentity;

    fn file_position(file: &str, offset: u64) -> Position {
        Position::File {
            server: ServerIdentity::Id(1),
            file: file.to_owned(),
            offset,
        }
    }

    #[test]
    fn a_file_position_moves_to_the_commit_event_end() {
        let mut cursor = Cursor::new(file_position("bin.000001", 4));
        cursor.rotate("bin.000001".to_owned(), 4, false);
        assert_eq!(cursor.committed(), &file_position("bin.000001", 4));
        cursor.saw_event(300);
        assert_eq!(
            cursor.committed(),
            &file_position("bin.000001", 4),
            "not before the commit"
        );
        cursor.saw_event(420);
        cursor.commit(&PendingGtid::None);
        assert_eq!(cursor.committed(), &file_position("bin.000001", 420));
    }

    #[test]
    fn a_rotation_between_transactions_moves_to_the_new_file() {
        let mut cursor = Cursor::new(file_position("bin.000001", 420));
        cursor.rotate("bin.000002".to_owned(), 4, true);
        assert_eq!(cursor.committed(), &file_position("bin.000002", 4));
        // Inside a transaction (never seen, but kept safe) it waits for the commit.
        cursor.rotate("bin.000003".to_owned(), 4, false);
        assert_eq!(cursor.committed(), &file_position("bin.000002", 4));
        cursor.saw_event(500);
        cursor.commit(&PendingGtid::None);
        assert_eq!(cursor.committed(), &file_position("bin.000003", 500));
    }

    #[test]
    fn a_compressed_transaction_ends_where_its_payload_ends() {
        let mut cursor = Cursor::new(file_position("bin.000001", 4));
        cursor.saw_event(9_000); // the payload event
        cursor.saw_event(0); // the events inside it
        cursor.saw_event(0);
        cursor.commit(&PendingGtid::None);
        assert_eq!(cursor.committed(), &file_position("bin.000001", 9_000));
    }

    #[test]
    fn gtid_positions_take_the_transaction_gtid() {
        let mut cursor = Cursor::new("mariadb-gtid:server_id=1:0-1-5".parse().unwrap());
        let gtid = MariaDbGtid {
            domain: 0,
            server_id: 1,
            sequence: 6,
        };
        cursor.commit(&PendingGtid::MariaDb(gtid));
        assert_eq!(
            cursor.committed().to_string(),
            "mariadb-gtid:server_id=1:0-1-6"
        );

        let uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        let mut cursor = Cursor::new(
            format!("mysql-gtid:server_uuid={uuid}:{uuid}:1-5")
                .parse()
                .unwrap(),
        );
        cursor.commit(&PendingGtid::MySql {
            uuid: uuid.to_owned(),
            tag: String::new(),
            gno: 6,
        });
        assert_eq!(
            cursor.committed().to_string(),
            format!("mysql-gtid:server_uuid={uuid}:{uuid}:1-6")
        );
    }
}
