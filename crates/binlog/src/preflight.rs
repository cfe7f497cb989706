//! Whether a server is ready to be followed, and what a DBA must run if
//! not. Reads only: it changes nothing on the server.
//!
//! Every way the reader can fail for want of a setting or a grant is
//! checked here first, so that a deployment is refused with the fixing
//! statement instead of failing later mid-stream: the log must be on, in
//! rows, with full images and column names, kept long enough, readable by
//! the reader's user, and the reader's `server_id` must be its own.

use std::fmt;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::Conn;

use crate::error::Error;
use crate::server::{self, variable, Flavor, Server};
use crate::tables::TableName;

/// What to check against.
#[derive(Debug, Clone)]
pub struct PreflightSettings {
    pub tables: Vec<TableName>,
    /// Binary logs must be kept at least this long (or never purged).
    pub min_retention: Duration,
    /// The server_id the reader will register with.
    pub server_id: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    /// Could not be checked, or is a risk rather than a fault.
    Warn,
    Fail,
}

/// One check: what was found and, unless it passed, the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub found: String,
    /// The statement to run or the my.cnf line to set.
    pub fix: Option<String>,
}

/// Every check, in the order made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// No check failed (warnings allowed).
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|check| check.status != Status::Fail)
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|check| check.status == Status::Fail)
    }

    /// The check named `name`.
    pub fn get(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|check| check.name == name)
    }

    fn pass(&mut self, name: &str, found: impl Into<String>) {
        self.push(name, Status::Pass, found, None);
    }

    fn push(&mut self, name: &str, status: Status, found: impl Into<String>, fix: Option<String>) {
        self.checks.push(Check {
            name: name.to_owned(),
            status,
            found: found.into(),
            fix,
        });
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            let mark = match check.status {
                Status::Pass => "ok  ",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
            };
            writeln!(f, "[{mark}] {}: {}", check.name, check.found)?;
            if let Some(fix) = &check.fix {
                for line in fix.lines() {
                    writeln!(f, "       fix: {line}")?;
                }
            }
        }
        Ok(())
    }
}

/// The fix for a dynamic global variable: now, and across restarts.
fn set_global(name: &str, value: &str) -> String {
    format!("SET GLOBAL {name} = {value};\nmy.cnf [mysqld]: {name} = {value}")
}

/// Checks the server at `url` for a reader with `settings`.
pub async fn preflight(url: &str, settings: &PreflightSettings) -> Result<Report, Error> {
    let mut conn = match server::connect(url).await {
        Ok(conn) => conn,
        // The URL's database is one the user may not read: a grant, so a
        // finding rather than an error.
        Err(Error::Database(mysql_async::Error::Server(error))) if error.code == 1044 => {
            let mut report = Report::default();
            report.push(
                "connect",
                Status::Fail,
                error.message.clone(),
                Some(database_grant(&error.message)),
            );
            return Ok(report);
        }
        Err(error) => return Err(error),
    };
    let result = checks(&mut conn, settings).await;
    let _ = conn.disconnect().await;
    result
}

async fn checks(conn: &mut Conn, settings: &PreflightSettings) -> Result<Report, Error> {
    let server = Server::read(conn).await?;
    let mut report = Report::default();

    if server.log_bin {
        report.pass("log_bin", "ON");
    } else {
        // Not dynamic: a restart with these lines.
        report.push(
            "log_bin",
            Status::Fail,
            "OFF",
            Some("my.cnf [mysqld]: log_bin = binlog\nmy.cnf [mysqld]: server_id = 1\n(then restart the server)".to_owned()),
        );
    }
    expect(conn, &mut report, "binlog_format", "ROW").await?;
    expect(conn, &mut report, "binlog_row_image", "FULL").await?;
    expect(conn, &mut report, "binlog_row_metadata", "FULL").await?;
    retention(conn, &mut report, &server, settings.min_retention).await?;
    match server.flavor {
        Flavor::MariaDb => expect(conn, &mut report, "log_bin_compress", "OFF").await?,
        Flavor::MySql => partial_json(conn, &mut report).await?,
    }
    replica_logging(conn, &mut report, &server).await?;
    grants(conn, &mut report, &server).await?;
    tables(conn, &mut report, &settings.tables).await?;
    server_id(conn, &mut report, &server, settings.server_id).await?;
    Ok(report)
}

/// A global variable that must have one value. One the server lacks
/// altogether fails too: the server is too old for the reader.
async fn expect(
    conn: &mut Conn,
    report: &mut Report,
    name: &str,
    wanted: &str,
) -> Result<(), Error> {
    let Some(found) = variable(conn, &format!("GLOBAL.{name}")).await? else {
        report.push(
            name,
            Status::Fail,
            "this server has no such variable (it needs MySQL 8.0.1 or MariaDB 10.5 or later)",
            Some("upgrade the server".to_owned()),
        );
        return Ok(());
    };
    let normalized = match found.as_str() {
        "0" => "OFF".to_owned(),
        "1" => "ON".to_owned(),
        other => other.to_ascii_uppercase(),
    };
    if normalized == wanted {
        report.pass(name, found);
        return Ok(());
    }
    let mut fix = set_global(name, wanted);
    if name == "binlog_format" {
        fix.push_str("\n(sessions already open keep their format until they reconnect)");
    }
    report.push(name, Status::Fail, found, Some(fix));
    Ok(())
}

/// How long the server keeps binary logs, in seconds; 0 is for ever.
/// `binlog_expire_logs_seconds` wins when set (MySQL 8; MariaDB 10.6
/// keeps it in step with `expire_logs_days`).
fn retention_seconds(expire_seconds: Option<&str>, expire_days: Option<&str>) -> u64 {
    let seconds = expire_seconds
        .and_then(|value| value.parse::<u64>().ok())
        .unwrap_or(0);
    if seconds > 0 {
        return seconds;
    }
    let days = expire_days
        .and_then(|value| value.parse::<f64>().ok())
        .unwrap_or(0.0);
    (days * 86_400.0).round() as u64
}

async fn retention(
    conn: &mut Conn,
    report: &mut Report,
    server: &Server,
    minimum: Duration,
) -> Result<(), Error> {
    let name = "binlog retention";
    // MySQL 8.0.29: with automatic purging off, nothing expires.
    if server.flavor == Flavor::MySql
        && matches!(
            variable(conn, "GLOBAL.binlog_expire_logs_auto_purge")
                .await?
                .as_deref(),
            Some("0" | "OFF")
        )
    {
        report.pass(
            name,
            "binlog_expire_logs_auto_purge = OFF: never purged automatically",
        );
        return Ok(());
    }
    let expire_seconds = variable(conn, "GLOBAL.binlog_expire_logs_seconds").await?;
    let expire_days = variable(conn, "GLOBAL.expire_logs_days").await?;
    let kept = retention_seconds(expire_seconds.as_deref(), expire_days.as_deref());
    if kept == 0 {
        report.pass(name, "0: never purged automatically");
    } else if kept >= minimum.as_secs() {
        report.pass(name, format!("{kept} s (at least {} s)", minimum.as_secs()));
    } else {
        report.push(
            name,
            Status::Fail,
            format!(
                "binary logs are purged after {kept} s, less than {} s",
                minimum.as_secs()
            ),
            Some(set_global(
                "binlog_expire_logs_seconds",
                &minimum.as_secs().to_string(),
            )),
        );
    }
    // MariaDB 11.4 also purges by total size, whatever the age.
    let size = variable(conn, "GLOBAL.max_binlog_total_size").await?;
    if let Some(size) = size.filter(|size| size != "0") {
        report.push(
            "max_binlog_total_size",
            Status::Warn,
            format!("{size} bytes: binary logs past this total are purged whatever their age"),
            Some(set_global("max_binlog_total_size", "0")),
        );
    }
    Ok(())
}

/// MySQL's partial JSON updates leave no full value in the row image.
async fn partial_json(conn: &mut Conn, report: &mut Report) -> Result<(), Error> {
    let name = "binlog_row_value_options";
    let value = variable(conn, &format!("GLOBAL.{name}"))
        .await?
        .unwrap_or_default();
    if value.to_ascii_uppercase().contains("PARTIAL_JSON") {
        report.push(name, Status::Fail, value, Some(set_global(name, "''")));
    } else {
        report.pass(
            name,
            if value.is_empty() {
                "''".to_owned()
            } else {
                value
            },
        );
    }
    Ok(())
}

/// A replica logs what it applies from its primary only with
/// `log_slave_updates` (`log_replica_updates` on MySQL 8): without it, a
/// reader of that replica sees only the replica's own writes.
async fn replica_logging(
    conn: &mut Conn,
    report: &mut Report,
    server: &Server,
) -> Result<(), Error> {
    let (running, variable_name) = match server.flavor {
        Flavor::MariaDb => {
            let row: Option<(String, String)> = conn
                .query_first("SHOW GLOBAL STATUS LIKE 'Slaves_running'")
                .await?;
            let running = row
                .and_then(|(_, value)| value.parse::<u64>().ok())
                .unwrap_or(0);
            (running, "log_slave_updates")
        }
        Flavor::MySql => {
            let sql = "SELECT COUNT(*) FROM performance_schema.replication_connection_status \
                       WHERE SERVICE_STATE = 'ON'";
            // performance_schema may be off or unreadable: then unknown, so 0.
            let running: u64 = conn.query_first(sql).await.ok().flatten().unwrap_or(0);
            (running, "log_replica_updates")
        }
    };
    if running == 0 {
        return Ok(());
    }
    let logged = match variable(conn, &format!("GLOBAL.{variable_name}")).await? {
        Some(value) => value,
        None => variable(conn, "GLOBAL.log_slave_updates")
            .await?
            .unwrap_or_default(),
    };
    if matches!(logged.as_str(), "1" | "ON") {
        report.pass(
            variable_name,
            "ON (this server is a replica and logs what it applies)",
        );
    } else {
        report.push(
            variable_name,
            Status::Fail,
            "OFF, and this server is a replica: what it applies from its primary is not in its log",
            Some(format!(
                "my.cnf [mysqld]: {variable_name} = ON\n(then restart the server)"
            )),
        );
    }
    Ok(())
}

/// The global privileges of `SHOW GRANTS` lines: "GRANT A, B ON *.* TO …".
fn global_privileges(lines: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for line in lines {
        let Some(rest) = line.strip_prefix("GRANT ") else {
            continue;
        };
        let Some((privileges, target)) = rest.split_once(" ON ") else {
            continue;
        };
        if !target.trim_start().starts_with("*.*") {
            continue;
        }
        for privilege in privileges.split(',') {
            found.push(privilege.trim().to_ascii_uppercase());
        }
    }
    found
}

/// Whether `held` grants `wanted` (or all privileges).
fn holds(held: &[String], wanted: &[&str]) -> bool {
    held.iter().any(|privilege| {
        privilege == "ALL PRIVILEGES" || privilege == "ALL" || wanted.contains(&privilege.as_str())
    })
}

async fn current_user(conn: &mut Conn) -> Result<String, Error> {
    let user: Option<String> = conn.query_first("SELECT CURRENT_USER()").await?;
    let user = user.unwrap_or_default();
    let (name, host) = user.rsplit_once('@').unwrap_or((user.as_str(), "%"));
    Ok(format!("'{name}'@'{host}'"))
}

async fn grants(conn: &mut Conn, report: &mut Report, server: &Server) -> Result<(), Error> {
    let user = current_user(conn).await?;
    let lines: Vec<String> = match conn.query("SHOW GRANTS").await {
        Ok(lines) => lines,
        Err(error) => {
            report.push(
                "grants",
                Status::Warn,
                format!("SHOW GRANTS failed, so the grants were not checked: {error}"),
                None,
            );
            return Ok(());
        }
    };
    let held = global_privileges(&lines);
    // MariaDB 10.5 renamed REPLICATION CLIENT to BINLOG MONITOR.
    let monitor = match server.flavor {
        Flavor::MariaDb if server.version >= (10, 5, 0) => "BINLOG MONITOR",
        _ => "REPLICATION CLIENT",
    };
    let wanted: [(&str, Vec<&str>); 2] = [
        (
            "REPLICATION SLAVE",
            vec!["REPLICATION SLAVE", "REPLICATION REPLICA"],
        ),
        (
            monitor,
            vec!["REPLICATION CLIENT", "BINLOG MONITOR", "SUPER"],
        ),
    ];
    for (privilege, accepted) in wanted {
        let name = format!("grant {privilege}");
        if holds(&held, &accepted) {
            report.pass(&name, format!("{user} holds it"));
        } else {
            report.push(
                &name,
                Status::Fail,
                format!("{user} lacks it (privileges held through a role that is not active are not seen)"),
                Some(format!("GRANT {privilege} ON *.* TO {user};")),
            );
        }
    }
    Ok(())
}

/// Each followed table exists and the user may read it.
async fn tables(conn: &mut Conn, report: &mut Report, tables: &[TableName]) -> Result<(), Error> {
    let user = current_user(conn).await?;
    for table in tables {
        let name = format!("SELECT on {table}");
        let sql = format!(
            "SELECT 1 FROM {}.{} LIMIT 0",
            quote_name(&table.schema),
            quote_name(&table.table)
        );
        match conn.query_drop(sql).await {
            Ok(()) => report.pass(&name, "readable"),
            Err(mysql_async::Error::Server(error)) if error.code == 1142 || error.code == 1044 => {
                report.push(
                    &name,
                    Status::Fail,
                    error.message.clone(),
                    Some(format!(
                        "GRANT SELECT ON {}.* TO {user};",
                        quote_name(&table.schema)
                    )),
                );
            }
            Err(mysql_async::Error::Server(error)) if error.code == 1146 || error.code == 1049 => {
                report.push(
                    &name,
                    Status::Fail,
                    error.message.clone(),
                    Some("check the table's name in the sources configuration".to_owned()),
                );
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// The grant an "Access denied for user 'u'@'h' to database 'd'" (1044)
/// asks for.
fn database_grant(message: &str) -> String {
    let user = message
        .split_once("for user ")
        .and_then(|(_, rest)| rest.split_once(" to database"))
        .map(|(user, _)| user.to_owned());
    let database = message
        .rsplit_once("to database '")
        .and_then(|(_, rest)| rest.strip_suffix('\''))
        .map(quote_name);
    match (user, database) {
        (Some(user), Some(database)) => format!("GRANT SELECT ON {database}.* TO {user};"),
        _ => "GRANT SELECT ON <the URL's database>.* TO <the reader's user>;".to_owned(),
    }
}

/// A backquoted identifier.
fn quote_name(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The reader's server_id must be neither the server's nor another
/// replica's: the server drops a dump when another registers with its id.
async fn server_id(
    conn: &mut Conn,
    report: &mut Report,
    server: &Server,
    reader_id: u32,
) -> Result<(), Error> {
    let name = "reader server_id";
    let other_id = "choose another server_id for the reader".to_owned();
    if reader_id == 0 {
        report.push(
            name,
            Status::Fail,
            "0, which a replica may not use",
            Some(other_id),
        );
        return Ok(());
    }
    if reader_id == server.server_id {
        report.push(
            name,
            Status::Fail,
            format!("{reader_id} is the server's own @@server_id"),
            Some(other_id),
        );
        return Ok(());
    }
    let statement = server.replicas_statement();
    let rows: Vec<mysql_async::Row> = match conn.query(statement).await {
        Ok(rows) => rows,
        Err(mysql_async::Error::Server(error)) if error.code == 1227 => {
            let grant = crate::error::privilege_named(&error.message);
            let user = current_user(conn).await?;
            report.push(
                name,
                Status::Warn,
                format!(
                    "{reader_id}, not checked against other replicas: {statement} needs {grant}"
                ),
                Some(format!("GRANT {grant} ON *.* TO {user};")),
            );
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    for row in rows {
        let id: Option<u32> = row.get(0);
        if id == Some(reader_id) {
            report.push(
                name,
                Status::Fail,
                format!(
                    "{reader_id} is registered by another replica ({statement}); if that is \
                     this reader's previous run, the server drops it when the reader reconnects"
                ),
                Some(other_id),
            );
            return Ok(());
        }
    }
    report.pass(name, format!("{reader_id} is free"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_reads_either_variable() {
        assert_eq!(retention_seconds(Some("0"), Some("0.000000")), 0);
        assert_eq!(retention_seconds(Some("2592000"), Some("0")), 2_592_000);
        assert_eq!(retention_seconds(Some("0"), Some("1.500000")), 129_600);
        assert_eq!(retention_seconds(None, Some("7")), 604_800);
        assert_eq!(retention_seconds(None, None), 0);
    }

    #[test]
    fn global_privileges_of_show_grants() {
        let lines = vec![
            "GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `s`@`%`".to_owned(),
            "GRANT ALL PRIVILEGES ON `site`.* TO `s`@`%`".to_owned(),
            "GRANT `reader_role` TO `s`@`%`".to_owned(),
        ];
        let held = global_privileges(&lines);
        assert_eq!(held, vec!["SELECT", "REPLICATION SLAVE", "BINLOG MONITOR"]);
        assert!(holds(&held, &["REPLICATION SLAVE"]));
        assert!(!holds(&held, &["REPLICATION CLIENT"]));
        let all = global_privileges(&[
            "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION".to_owned(),
        ]);
        assert!(holds(&all, &["REPLICATION CLIENT"]));
    }

    #[test]
    fn a_denied_database_names_its_grant() {
        assert_eq!(
            database_grant("Access denied for user 'bare'@'%' to database 'test'"),
            "GRANT SELECT ON `test`.* TO 'bare'@'%';"
        );
    }

    #[test]
    fn report_prints_each_fix() {
        let mut report = Report::default();
        report.pass("log_bin", "ON");
        report.push(
            "binlog_row_metadata",
            Status::Fail,
            "MINIMAL",
            Some(set_global("binlog_row_metadata", "FULL")),
        );
        assert!(!report.passed());
        let text = report.to_string();
        assert!(text.contains("[FAIL] binlog_row_metadata: MINIMAL"));
        assert!(text.contains("fix: SET GLOBAL binlog_row_metadata = FULL;"));
        assert!(text.contains("fix: my.cnf [mysqld]: binlog_row_metadata = FULL"));
    }
}
