//! Where a reader stands in the log: the point just after the last
//! transaction it has passed on, as one string that is stored with the
//! index commit and read back at start.
//!
//! Three forms, because servers resume replicas three ways:
//! - MariaDB: by GTID position (`@slave_connect_state`), which survives a
//!   failover to another server of the same replication topology;
//! - MySQL with `gtid_mode=ON`: by the set of GTIDs seen;
//! - otherwise: by binlog file and offset, which mean something only on
//!   the server that wrote them. So the server's identity is kept with
//!   them (`server_uuid` on MySQL, `server_id` on MariaDB) and a resume on
//!   another server is refused rather than silently skipping or replaying.
//!
//! The text forms, `kind:identity:rest`:
//! - `mariadb-gtid:server_id=1:0-1-42,1-2-7`
//! - `mysql-gtid:server_uuid=3e11…:3e11…:1-5`
//! - `file:server_id=1:binlog.000003:1234` (or `server_uuid=…`)

use std::fmt;
use std::str::FromStr;

use crate::gtid_set::{is_uuid, GtidSet};
use crate::mariadb_gtid::MariaDbGtids;

/// The server that wrote a log, as its replicas tell servers apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerIdentity {
    /// MySQL's `@@server_uuid`.
    Uuid(String),
    /// MariaDB's `@@server_id` (MariaDB has no server uuid).
    Id(u32),
}

impl fmt::Display for ServerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerIdentity::Uuid(uuid) => write!(f, "server_uuid={uuid}"),
            ServerIdentity::Id(id) => write!(f, "server_id={id}"),
        }
    }
}

impl FromStr for ServerIdentity {
    type Err = String;

    fn from_str(text: &str) -> Result<ServerIdentity, String> {
        if let Some(uuid) = text.strip_prefix("server_uuid=") {
            if !is_uuid(uuid) {
                return Err(format!("{uuid:?} is not a uuid"));
            }
            return Ok(ServerIdentity::Uuid(uuid.to_ascii_lowercase()));
        }
        if let Some(id) = text.strip_prefix("server_id=") {
            return id
                .parse()
                .map(ServerIdentity::Id)
                .map_err(|_| format!("{id:?} is not a server id"));
        }
        Err(format!("{text:?} is neither server_uuid=… nor server_id=…"))
    }
}

/// A point in a server's binary log just after a committed transaction:
/// resuming there yields exactly the transactions committed after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// MariaDB: the last GTID of each domain (`@@gtid_binlog_pos`).
    MariaDbGtid {
        /// The server the position was read from. Not checked on resume: a
        /// GTID position means the same on every server of the topology.
        server_id: u32,
        gtids: MariaDbGtids,
    },
    /// MySQL with `gtid_mode=ON`: every GTID seen (`@@gtid_executed`).
    MySqlGtid {
        /// The server the position was read from; not checked on resume,
        /// for the same reason.
        server_uuid: String,
        executed: GtidSet,
    },
    /// A binlog file and the offset of the next event in it.
    File {
        server: ServerIdentity,
        file: String,
        offset: u64,
    },
}

impl Position {
    /// The server identity written with the position.
    pub fn identity(&self) -> ServerIdentity {
        match self {
            Position::MariaDbGtid { server_id, .. } => ServerIdentity::Id(*server_id),
            Position::MySqlGtid { server_uuid, .. } => ServerIdentity::Uuid(server_uuid.clone()),
            Position::File { server, .. } => server.clone(),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::MariaDbGtid { server_id, gtids } => {
                write!(f, "mariadb-gtid:server_id={server_id}:{gtids}")
            }
            Position::MySqlGtid {
                server_uuid,
                executed,
            } => write!(f, "mysql-gtid:server_uuid={server_uuid}:{executed}"),
            Position::File {
                server,
                file,
                offset,
            } => write!(f, "file:{server}:{file}:{offset}"),
        }
    }
}

/// A stored position that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a binlog position: {text:?} ({reason})")]
pub struct BadPosition {
    pub text: String,
    pub reason: String,
}

impl FromStr for Position {
    type Err = BadPosition;

    fn from_str(text: &str) -> Result<Position, BadPosition> {
        let bad = |reason: String| BadPosition {
            text: text.to_owned(),
            reason,
        };
        let mut parts = text.splitn(3, ':');
        let kind = parts.next().unwrap_or_default();
        let (Some(identity), Some(rest)) = (parts.next(), parts.next()) else {
            return Err(bad("expected kind:identity:position".to_owned()));
        };
        let identity: ServerIdentity = identity.parse().map_err(bad)?;
        match kind {
            "mariadb-gtid" => {
                let ServerIdentity::Id(server_id) = identity else {
                    return Err(bad("a MariaDB position names a server_id".to_owned()));
                };
                let gtids = rest
                    .parse()
                    .map_err(|e: crate::mariadb_gtid::BadMariaDbGtids| bad(e.0))?;
                Ok(Position::MariaDbGtid { server_id, gtids })
            }
            "mysql-gtid" => {
                let ServerIdentity::Uuid(server_uuid) = identity else {
                    return Err(bad("a MySQL GTID position names a server_uuid".to_owned()));
                };
                let executed = rest
                    .parse()
                    .map_err(|e: crate::gtid_set::BadGtidSet| bad(e.0))?;
                Ok(Position::MySqlGtid {
                    server_uuid,
                    executed,
                })
            }
            "file" => {
                // The offset follows the last colon, so a file name may hold one.
                let Some((file, offset)) = rest.rsplit_once(':') else {
                    return Err(bad("expected file:offset".to_owned()));
                };
                let Ok(offset) = offset.parse::<u64>() else {
                    return Err(bad(format!("{offset:?} is not an offset")));
                };
                if file.is_empty() {
                    return Err(bad("the file name is empty".to_owned()));
                }
                Ok(Position::File {
                    server: identity,
                    file: file.to_owned(),
                    offset,
                })
            }
            _ => Err(bad(format!("unknown kind {kind:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let position: Position = text.parse().unwrap();
        assert_eq!(position.to_string(), text);
    }

    #[test]
    fn every_form_round_trips() {
        round_trip("mariadb-gtid:server_id=1:0-1-42,1-2-7");
        round_trip("mariadb-gtid:server_id=1:");
        round_trip(
            "mysql-gtid:server_uuid=3e11fa47-71ca-11e1-9e33-c80aa9429562:\
             3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7",
        );
        round_trip("mysql-gtid:server_uuid=3e11fa47-71ca-11e1-9e33-c80aa9429562:");
        round_trip("file:server_id=7:binlog-bin.000003:1234");
        round_trip("file:server_uuid=3e11fa47-71ca-11e1-9e33-c80aa9429562:binlog.000001:4");
    }

    #[test]
    fn a_file_name_may_hold_a_colon() {
        let position: Position = "file:server_id=7:odd:name.000001:99".parse().unwrap();
        assert_eq!(
            position,
            Position::File {
                server: ServerIdentity::Id(7),
                file: "odd:name.000001".to_owned(),
                offset: 99
            }
        );
    }

    #[test]
    fn rejects_what_is_not_a_position() {
        for text in [
            "",
            "file:server_id=7:binlog.000001",
            "file:server_id=x:binlog.000001:4",
            "mariadb-gtid:server_uuid=3e11fa47-71ca-11e1-9e33-c80aa9429562:0-1-2",
            "mysql-gtid:server_id=1:",
            "outbox:server_id=1:5",
        ] {
            assert!(text.parse::<Position>().is_err(), "{text}");
        }
    }
}
