//! The server a reader talks to: connecting, what kind of server it is,
//! and where its log stands now.
//!
//! MySQL and MariaDB share a protocol but not their replication details:
//! positions, GTIDs, the statements that show the log, privileges. They
//! are told apart once, here, from `@@version`.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use crate::error::Error;
use crate::position::{Position, ServerIdentity};

/// Which server family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    MySql,
    MariaDb,
}

/// What the reader needs to know about a server.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    pub(crate) flavor: Flavor,
    /// (major, minor, patch) of `@@version`.
    pub(crate) version: (u32, u32, u32),
    pub(crate) server_id: u32,
    /// MySQL's `@@server_uuid`; MariaDB has none.
    pub(crate) server_uuid: Option<String>,
    /// MySQL's `@@gtid_mode` is `ON`: every transaction has a GTID.
    pub(crate) gtid_mode: bool,
    pub(crate) log_bin: bool,
}

/// Connection options from a URL: `mysql://` or `mariadb://`. Query
/// parameters are dropped: they are the store's (sqlx) options, which
/// `mysql_async` does not share, and this connection needs none.
pub(crate) fn opts(url: &str) -> Result<Opts, Error> {
    let url = match url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => url.to_owned(),
    };
    let url = match url.split_once('?') {
        Some((base, _parameters)) => base.to_owned(),
        None => url,
    };
    let opts = Opts::from_url(&url).map_err(|error| Error::Url(error.to_string()))?;
    let builder = OptsBuilder::from_opts(opts)
        // Row events of one large row can exceed the server's default
        // max_allowed_packet, and mysql_async refuses any packet above
        // its own limit; the server caps what it sends at 1 GiB anyway.
        .max_allowed_packet(Some(1 << 30))
        // Over TCP, as the URL says: not the server's socket file, which
        // may be on another machine's path.
        .prefer_socket(false)
        // A dump connection is idle between heartbeats: keep the path open.
        .tcp_keepalive(Some(Duration::from_secs(30)));
    Ok(builder.into())
}

pub(crate) async fn connect(url: &str) -> Result<Conn, Error> {
    let conn = Conn::new(opts(url)?).await?;
    Ok(conn)
}

/// A system variable, or `None` where the server has no such variable
/// (error 1193), as older or other servers do not.
pub(crate) async fn variable(conn: &mut Conn, name: &str) -> Result<Option<String>, Error> {
    let sql = format!("SELECT CAST(@@{name} AS CHAR)");
    match conn.query_first::<Option<String>, _>(sql).await {
        Ok(value) => Ok(value.flatten()),
        Err(mysql_async::Error::Server(error)) if error.code == 1193 => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// `10.11.19-MariaDB-0+deb12u1-log` to (10, 11, 19).
fn version_numbers(version: &str) -> (u32, u32, u32) {
    let numbers = version.split('-').next().unwrap_or_default();
    let mut parts = numbers
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

impl Server {
    pub(crate) async fn read(conn: &mut Conn) -> Result<Server, Error> {
        let version = variable(conn, "version").await?.unwrap_or_default();
        let flavor = if version.contains("MariaDB") {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        };
        let server_id = variable(conn, "server_id")
            .await?
            .and_then(|id| id.parse().ok())
            .unwrap_or(0);
        let log_bin = matches!(
            variable(conn, "log_bin").await?.as_deref(),
            Some("1" | "ON")
        );
        let mut server = Server {
            flavor,
            version: version_numbers(&version),
            server_id,
            server_uuid: None,
            gtid_mode: false,
            log_bin,
        };
        if flavor == Flavor::MySql {
            server.server_uuid = variable(conn, "server_uuid")
                .await?
                .map(|uuid| uuid.to_ascii_lowercase());
            server.gtid_mode = variable(conn, "gtid_mode").await?.as_deref() == Some("ON");
        }
        Ok(server)
    }

    /// How this server's replicas tell it apart.
    pub(crate) fn identity(&self) -> ServerIdentity {
        match &self.server_uuid {
            Some(uuid) => ServerIdentity::Uuid(uuid.clone()),
            None => ServerIdentity::Id(self.server_id),
        }
    }

    /// `SHOW BINARY LOG STATUS` from MySQL 8.2 on (8.4 dropped the old
    /// name), `SHOW MASTER STATUS` before and on MariaDB.
    pub(crate) fn log_status_statement(&self) -> &'static str {
        if self.flavor == Flavor::MySql && self.version >= (8, 2, 0) {
            "SHOW BINARY LOG STATUS"
        } else {
            "SHOW MASTER STATUS"
        }
    }

    /// `SHOW REPLICAS` from MySQL 8.0.22 on (8.4 dropped the old name),
    /// `SHOW SLAVE HOSTS` before and on MariaDB.
    pub(crate) fn replicas_statement(&self) -> &'static str {
        if self.flavor == Flavor::MySql && self.version >= (8, 0, 22) {
            "SHOW REPLICAS"
        } else {
            "SHOW SLAVE HOSTS"
        }
    }
}

/// The server's current position: where a reader starts so as to see
/// every transaction committed after the call. A rebuild records it before
/// its scan, then replays from it.
///
/// - MariaDB: the GTID position of a consistent snapshot
///   (`BINLOG_GTID_POS` of `Binlog_snapshot_file`/`_position`), which on an
///   idle server is `@@gtid_binlog_pos`. Not `@@gtid_binlog_pos` read
///   alone: a transaction is in the binary log a moment before its rows
///   are visible, and a position that counts a transaction the scan
///   cannot yet see would lose it. Not `@@gtid_current_pos` either, which
///   mixes in what this server applied as a replica.
/// - MySQL with `gtid_mode=ON`: `@@gtid_executed`, which MySQL extends
///   only once a transaction is committed in the engine.
/// - otherwise: the file and offset of `SHOW BINARY LOG STATUS` (or
///   `SHOW MASTER STATUS`), with the server's identity.
pub async fn current_position(url: &str) -> Result<Position, Error> {
    let mut conn = connect(url).await?;
    let result = position_on(&mut conn).await;
    let _ = conn.disconnect().await;
    result
}

pub(crate) async fn position_on(conn: &mut Conn) -> Result<Position, Error> {
    let server = Server::read(conn).await?;
    if !server.log_bin {
        return Err(Error::NoBinaryLog);
    }
    match server.flavor {
        Flavor::MariaDb => mariadb_snapshot_position(conn, &server).await,
        Flavor::MySql if server.gtid_mode => {
            let executed = variable(conn, "gtid_executed").await?.unwrap_or_default();
            let executed = executed
                .parse()
                .map_err(|error: crate::gtid_set::BadGtidSet| Error::Decode {
                    what: "@@gtid_executed".to_owned(),
                    position: "the server's current position".to_owned(),
                    reason: error.0,
                })?;
            Ok(Position::MySqlGtid {
                server_uuid: server.server_uuid.clone().unwrap_or_default(),
                executed,
            })
        }
        Flavor::MySql => file_position(conn, &server).await,
    }
}

/// The file and offset the log has reached.
async fn file_position(conn: &mut Conn, server: &Server) -> Result<Position, Error> {
    let row: Option<mysql_async::Row> = conn.query_first(server.log_status_statement()).await?;
    let Some(row) = row else {
        return Err(Error::NoBinaryLog);
    };
    let file: Option<String> = row.get(0);
    let offset: Option<u64> = row.get(1);
    let (Some(file), Some(offset)) = (file, offset) else {
        return Err(Error::NoBinaryLog);
    };
    Ok(Position::File {
        server: server.identity(),
        file,
        offset,
    })
}

/// MariaDB: the GTID position matching a consistent snapshot, read in a
/// transaction of its own.
async fn mariadb_snapshot_position(conn: &mut Conn, server: &Server) -> Result<Position, Error> {
    conn.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        .await?;
    let rows: Vec<(String, String)> = conn.query("SHOW STATUS LIKE 'binlog_snapshot_%'").await?;
    let mut file = None;
    let mut offset = None;
    for (name, value) in rows {
        if name.eq_ignore_ascii_case("Binlog_snapshot_file") {
            file = Some(value);
        } else if name.eq_ignore_ascii_case("Binlog_snapshot_position") {
            offset = value.parse::<u64>().ok();
        }
    }
    let gtids: Option<Option<String>> = match (file, offset) {
        (Some(file), Some(offset)) if !file.is_empty() => {
            conn.exec_first("SELECT BINLOG_GTID_POS(?, ?)", (file, offset))
                .await?
        }
        _ => None,
    };
    conn.query_drop("COMMIT").await?;
    // No snapshot coordinates (never seen on 10.11, but cheap to cover):
    // the log's own position.
    let gtids = match gtids.flatten() {
        Some(gtids) => gtids,
        None => variable(conn, "gtid_binlog_pos").await?.unwrap_or_default(),
    };
    let gtids =
        gtids.parse().map_err(
            |error: crate::mariadb_gtid::BadMariaDbGtids| Error::Decode {
                what: "the GTID position".to_owned(),
                position: "the server's current position".to_owned(),
                reason: error.0,
            },
        )?;
    Ok(Position::MariaDbGtid {
        server_id: server.server_id,
        gtids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_either_spelling() {
        assert_eq!(
            version_numbers("10.11.19-MariaDB-0+deb12u1-log"),
            (10, 11, 19)
        );
        assert_eq!(version_numbers("8.0.36"), (8, 0, 36));
        assert_eq!(version_numbers("8.4.0-commercial"), (8, 4, 0));
    }

    #[test]
    fn urls_of_either_scheme_lose_their_parameters() {
        let parsed = opts("mariadb://u:p@db.example:3307/site?ssl-mode=DISABLED").unwrap();
        assert_eq!(parsed.ip_or_hostname(), "db.example");
        assert_eq!(parsed.tcp_port(), 3307);
        assert_eq!(parsed.user(), Some("u"));
        assert_eq!(parsed.db_name(), Some("site"));
        assert!(opts("postgres://x").is_err());
    }

    fn server(flavor: Flavor, version: (u32, u32, u32)) -> Server {
        Server {
            flavor,
            version,
            server_id: 1,
            server_uuid: None,
            gtid_mode: false,
            log_bin: true,
        }
    }

    #[test]
    fn statements_follow_the_renames_of_mysql_8() {
        assert_eq!(
            server(Flavor::MySql, (8, 0, 36)).log_status_statement(),
            "SHOW MASTER STATUS"
        );
        assert_eq!(
            server(Flavor::MySql, (8, 4, 0)).log_status_statement(),
            "SHOW BINARY LOG STATUS"
        );
        assert_eq!(
            server(Flavor::MariaDb, (11, 4, 0)).log_status_statement(),
            "SHOW MASTER STATUS"
        );
        assert_eq!(
            server(Flavor::MySql, (8, 0, 21)).replicas_statement(),
            "SHOW SLAVE HOSTS"
        );
        assert_eq!(
            server(Flavor::MySql, (8, 0, 22)).replicas_statement(),
            "SHOW REPLICAS"
        );
        assert_eq!(
            server(Flavor::MariaDb, (10, 11, 0)).replicas_statement(),
            "SHOW SLAVE HOSTS"
        );
    }
}
