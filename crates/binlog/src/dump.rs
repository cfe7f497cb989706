//! Asking the server for its log from a position, as a replica does, and
//! naming what goes wrong.
//!
//! The checks that can be made before the dump are made first (the server
//! has a log, the position is of a kind it resumes by, a file and offset
//! are its own, MySQL has not purged GTIDs the position lacks), so the
//! common faults get a precise error rather than the server's generic 1236.
//!
//! MariaDB is asked by GTID through session variables on the very
//! connection that then sends `COM_BINLOG_DUMP` (`mysql_async` keeps the
//! `Conn` it turns into the stream), as MariaDB's own replicas and
//! go-mysql do:
//! - `@mariadb_slave_capability = 4`: the reader understands GTID events
//!   (without it MariaDB sends dummy events in their place);
//! - `@slave_connect_state = '<position>'`: start after these GTIDs; with
//!   it set, MariaDB ignores the dump's file name and offset;
//! - `@slave_gtid_strict_mode = 1`: a position the log does not hold is an
//!   error, not a silent start elsewhere.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest};

use crate::error::{privilege_named, Error};
use crate::gtid_set::GtidSet;
use crate::position::Position;
use crate::server::{self, Flavor, Server};

/// A dump under way.
pub(crate) struct Dump {
    pub(crate) stream: BinlogStream,
    pub(crate) server: Server,
}

/// Connects and asks for the log just after `from`.
pub(crate) async fn start(
    url: &str,
    server_id: u32,
    from: &Position,
    heartbeat: Duration,
) -> Result<Dump, Error> {
    let mut conn = server::connect(url).await?;
    let server = Server::read(&mut conn).await?;
    if !server.log_bin {
        return Err(Error::NoBinaryLog);
    }
    check_position(&mut conn, &server, from).await?;

    // The server sends a heartbeat after this long without events: the
    // reader learns it is caught up, and notices a dead connection. MySQL
    // 8.0.26 and later read the `source_` name, earlier servers and
    // MariaDB the `master_` one; a variable nobody reads costs nothing.
    let nanos = heartbeat.as_nanos().max(1);
    conn.query_drop(format!(
        "SET @master_heartbeat_period = {nanos}, @source_heartbeat_period = {nanos}"
    ))
    .await?;
    if server.flavor == Flavor::MariaDb {
        conn.query_drop("SET @mariadb_slave_capability = 4").await?;
    }

    let request = BinlogStreamRequest::new(server_id);
    let request = match from {
        Position::File { file, offset, .. } => {
            request.with_filename(file.as_bytes()).with_pos(*offset)
        }
        Position::MySqlGtid { executed, .. } => {
            request.with_gtid().with_gtid_set(executed.to_sids())
        }
        Position::MariaDbGtid { gtids, .. } => {
            // The text is digits, dashes and commas (it was parsed), so it
            // is safe inside quotes.
            conn.query_drop(format!("SET @slave_connect_state = '{gtids}'"))
                .await?;
            conn.query_drop("SET @slave_gtid_strict_mode = 1").await?;
            request
        }
    };
    let stream = conn
        .get_binlog_stream(request)
        .await
        .map_err(|error| classify(error, from))?;
    Ok(Dump { stream, server })
}

/// Refuses a position this server cannot resume from.
async fn check_position(
    conn: &mut mysql_async::Conn,
    server: &Server,
    from: &Position,
) -> Result<(), Error> {
    let wrong_kind = |reason: &str| Error::WrongKind {
        position: from.to_string(),
        reason: reason.to_owned(),
    };
    match from {
        Position::File { server: saved, .. } => {
            let actual = server.identity();
            if *saved != actual {
                return Err(Error::OtherServer {
                    position: from.to_string(),
                    saved: saved.clone(),
                    actual,
                });
            }
            Ok(())
        }
        Position::MariaDbGtid { .. } => {
            if server.flavor != Flavor::MariaDb {
                return Err(wrong_kind(
                    "a MariaDB GTID position, and this server is MySQL",
                ));
            }
            Ok(())
        }
        Position::MySqlGtid { executed, .. } => {
            if server.flavor != Flavor::MySql {
                return Err(wrong_kind("a MySQL GTID set, and this server is MariaDB"));
            }
            if !server.gtid_mode {
                return Err(wrong_kind(
                    "a MySQL GTID set, and this server runs with gtid_mode OFF",
                ));
            }
            // As Materialize does: transactions purged from the log that the
            // position has not seen are lost to it.
            let purged = server::variable(conn, "gtid_purged")
                .await?
                .unwrap_or_default();
            let purged: GtidSet =
                purged
                    .parse()
                    .map_err(|error: crate::gtid_set::BadGtidSet| Error::Decode {
                        what: "@@gtid_purged".to_owned(),
                        position: from.to_string(),
                        reason: error.0,
                    })?;
            if !executed.contains_all(&purged) {
                return Err(Error::Purged {
                    position: from.to_string(),
                    reason: format!("@@gtid_purged is {purged}, which holds transactions the position has not seen"),
                });
            }
            Ok(())
        }
    }
}

/// Names a failure of the dump. The server reports every fatal dump
/// failure as error 1236 with a message; the messages that matter are
/// MySQL's and MariaDB's own wording.
pub(crate) fn classify(error: mysql_async::Error, position: &Position) -> Error {
    if let mysql_async::Error::Server(server_error) = &error {
        let message = server_error.message.as_str();
        if server_error.code == 1227 {
            return Error::Privilege {
                grant: privilege_named(message),
                message: message.to_owned(),
            };
        }
        // The login succeeded before the dump was asked for, so an access
        // denied here is MariaDB refusing COM_REGISTER_SLAVE, which it
        // reports as 1045 rather than 1227.
        if server_error.code == 1045 {
            return Error::Privilege {
                grant: "REPLICATION SLAVE".to_owned(),
                message: message.to_owned(),
            };
        }
        if server_error.code == 1236 {
            let lower = message.to_ascii_lowercase();
            if lower.contains("max_allowed_packet") {
                return Error::EventTooLarge {
                    position: position.to_string(),
                    reason: message.to_owned(),
                };
            }
            let not_in_log = [
                // MariaDB: "connecting slave requested to start from GTID
                // 0-1-1000, which is not in the master's binlog"
                "not in the master's binlog",
                // MySQL: "Slave has more GTIDs than the master has, ..."
                "more gtids than",
            ];
            if not_in_log.iter().any(|needle| lower.contains(needle)) {
                return Error::NotInLog {
                    position: position.to_string(),
                    reason: message.to_owned(),
                };
            }
            let purged = [
                // MySQL and MariaDB, by file: the file is gone.
                "could not find first log file name",
                // MySQL, by GTID: "...the master has purged binary logs containing GTIDs..."
                "purged",
                // MariaDB, by GTID: "...Probably the slave state is too old and
                // required binlog files have been purged."
                "too old",
            ];
            if purged.iter().any(|needle| lower.contains(needle)) {
                return Error::Purged {
                    position: position.to_string(),
                    reason: message.to_owned(),
                };
            }
        }
    }
    if let mysql_async::Error::Io(mysql_async::IoError::Io(io_error)) = &error {
        // mysql_async's own limit on one packet (set to the 1 GiB maximum).
        if io_error.to_string().contains("max_allowed_packet") {
            return Error::EventTooLarge {
                position: position.to_string(),
                reason: io_error.to_string(),
            };
        }
    }
    Error::Database(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(code: u16, message: &str) -> mysql_async::Error {
        mysql_async::Error::Server(mysql_async::ServerError {
            code,
            message: message.to_owned(),
            state: "HY000".to_owned(),
        })
    }

    fn position() -> Position {
        "mariadb-gtid:server_id=1:0-1-5".parse().unwrap()
    }

    #[test]
    fn the_servers_wording_picks_the_error() {
        let purged_file = server_error(
            1236,
            "Could not find first log file name in binary log index file",
        );
        assert!(matches!(
            classify(purged_file, &position()),
            Error::Purged { .. }
        ));
        let purged_mysql_gtid = server_error(
            1236,
            "Cannot replicate because the source purged required binary logs. Replicate the missing \
             transactions from elsewhere, or provision a new replica from backup.",
        );
        assert!(matches!(
            classify(purged_mysql_gtid, &position()),
            Error::Purged { .. }
        ));
        let too_large = server_error(
            1236,
            "log event entry exceeded max_allowed_packet; Increase max_allowed_packet on master",
        );
        assert!(matches!(
            classify(too_large, &position()),
            Error::EventTooLarge { .. }
        ));
        let denied = server_error(
            1227,
            "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) for this operation",
        );
        match classify(denied, &position()) {
            Error::Privilege { grant, .. } => assert_eq!(grant, "REPLICATION SLAVE"),
            other => panic!("{other}"),
        }
        let ahead = server_error(
            1236,
            "Error: connecting slave requested to start from GTID 0-1-1000, which is not in the master's binlog",
        );
        assert!(matches!(
            classify(ahead, &position()),
            Error::NotInLog { .. }
        ));
        let register_denied = server_error(
            1045,
            "Access denied for user 'plain'@'%' (using password: NO)",
        );
        match classify(register_denied, &position()) {
            Error::Privilege { grant, .. } => assert_eq!(grant, "REPLICATION SLAVE"),
            other => panic!("{other}"),
        }
        let other = server_error(1236, "binlog truncated in the middle of event");
        assert!(matches!(classify(other, &position()), Error::Database(_)));
    }
}
