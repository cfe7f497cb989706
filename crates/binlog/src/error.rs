//! The reader's errors, each naming what happened and, where a person
//! must act, the statement that fixes it.
//!
//! The faults a caller handles differently have variants of their own:
//! a purged position means a rebuild, a position from another server
//! means refusing to start, a missing privilege or setting means asking
//! the DBA. Everything else the server or the network said is `Database`,
//! which the reader retries when it is a lost connection.

use std::time::Duration;

use crate::position::{BadPosition, ServerIdentity};
use crate::tables::TableName;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a MySQL URL: {0}")]
    Url(String),

    #[error(transparent)]
    BadPosition(#[from] BadPosition),

    /// The server has no binary log to follow.
    #[error(
        "the server's binary log is off: start it with log_bin \
         (my.cnf: log_bin = binlog, server_id = 1, binlog_format = ROW)"
    )]
    NoBinaryLog,

    /// The position is no longer in the server's binary logs: they were
    /// purged past it. Nothing after it can be replayed, so the caller
    /// must start again from a new snapshot.
    #[error(
        "binlog position {position} is no longer on the server (the binary logs were \
         purged past it): {reason}. Start again from a new snapshot, and keep binary \
         logs longer (binlog_expire_logs_seconds) than the reader may be stopped"
    )]
    Purged { position: String, reason: String },

    /// The server's log does not hold the position, and not because it
    /// was purged: the position is ahead of the log (a server restored
    /// from an older backup, or a diverged one), or from another topology.
    #[error(
        "binlog position {position} is not in this server's binary log: {reason}. \
         Start again from a new snapshot of this server"
    )]
    NotInLog { position: String, reason: String },

    /// A file and offset written by another server: meaningless here.
    #[error(
        "binlog position {position} is a file and offset of the server with {saved}, \
         but this server has {actual}: a file and offset mean nothing on another server \
         (a failover without GTIDs). Start again from a new snapshot of this server"
    )]
    OtherServer {
        position: String,
        saved: ServerIdentity,
        actual: ServerIdentity,
    },

    /// A position of one kind on a server that resumes by another (a
    /// MariaDB GTID position on MySQL, a MySQL GTID set without
    /// `gtid_mode=ON`).
    #[error("binlog position {position} cannot be followed on this server: {reason}")]
    WrongKind { position: String, reason: String },

    /// An event larger than a `max_allowed_packet` on the way.
    #[error(
        "a binlog event after {position} is larger than max_allowed_packet ({reason}). \
         Fix on the server: SET GLOBAL max_allowed_packet = 1073741824 \
         (my.cnf: max_allowed_packet = 1G)"
    )]
    EventTooLarge { position: String, reason: String },

    /// The reader's user lacks a privilege.
    #[error("the reader's user lacks the {grant} privilege ({message}). Fix: GRANT {grant} ON *.* TO <user>")]
    Privilege { grant: String, message: String },

    /// The table map of a followed table has no column names.
    #[error(
        "the binary log has no column names for {table}: the server writes them only \
         with binlog_row_metadata=FULL. Fix: SET GLOBAL binlog_row_metadata = FULL \
         (my.cnf: binlog_row_metadata = FULL); events written before that carry no \
         names, so start again from a position after it"
    )]
    NoColumnNames { table: TableName },

    /// An event this reader could not decode.
    #[error("cannot decode {what} after binlog position {position}: {reason}")]
    Decode {
        what: String,
        position: String,
        reason: String,
    },

    /// An event the reader cannot follow, such as a compressed one.
    #[error("unsupported event after binlog position {position}: {what}")]
    Unsupported { position: String, what: String },

    /// The server went away and did not come back in time.
    #[error("lost the binlog connection and could not reconnect within {waited:?}: {last}")]
    GaveUp { waited: Duration, last: Box<Error> },

    /// Any other answer of the server, or a failure of the connection.
    #[error("database: {0}")]
    Database(#[from] mysql_async::Error),
}

/// Server error codes that mean the connection is gone or the server is
/// going away: worth reconnecting for.
const TRANSIENT_SERVER_CODES: [u16; 7] = [
    1040, // ER_CON_COUNT_ERROR: too many connections
    1053, // ER_SERVER_SHUTDOWN
    1077, // ER_NORMAL_SHUTDOWN
    1317, // ER_QUERY_INTERRUPTED
    1927, // ER_CONNECTION_KILLED (MariaDB)
    2006, // CR_SERVER_GONE_ERROR
    2013, // CR_SERVER_LOST
];

impl Error {
    /// Whether reconnecting from the last committed position may cure it.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Database(mysql_async::Error::Server(error)) => {
                TRANSIENT_SERVER_CODES.contains(&error.code)
            }
            Error::Database(mysql_async::Error::Io(_)) => true,
            Error::Database(mysql_async::Error::Driver(driver)) => matches!(
                driver,
                mysql_async::DriverError::ConnectionClosed
                    | mysql_async::DriverError::PacketOutOfOrder
            ),
            _ => false,
        }
    }
}

/// The privilege an access-denied message (error 1227) asks for: in
/// "you need (at least one of) the SUPER, BINLOG MONITOR privilege(s)",
/// the one that is not SUPER (SUPER is far broader than a reader needs).
pub(crate) fn privilege_named(message: &str) -> String {
    let Some(start) = message.find("the ") else {
        return "REPLICATION SLAVE".to_owned();
    };
    let rest = &message[start + 4..];
    let Some(end) = rest.find(" privilege") else {
        return "REPLICATION SLAVE".to_owned();
    };
    let names: Vec<&str> = rest[..end].split(',').map(str::trim).collect();
    for name in &names {
        if !name.eq_ignore_ascii_case("SUPER") {
            return (*name).to_owned();
        }
    }
    names
        .first()
        .copied()
        .unwrap_or("REPLICATION SLAVE")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_narrow_privilege() {
        assert_eq!(
            privilege_named(
                "Access denied; you need (at least one of) the SUPER, BINLOG MONITOR privilege(s) for this operation"
            ),
            "BINLOG MONITOR"
        );
        assert_eq!(
            privilege_named("Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) for this operation"),
            "REPLICATION SLAVE"
        );
    }
}
