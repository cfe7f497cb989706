//! `chaja install`: the outbox and its triggers, on the site's own database.
//!
//! Three triggers per source (after insert, update, delete) write the
//! changed row's key to `search_outbox` in the writer's own transaction;
//! they do not look at the row's content or its `filter`: the indexer reads
//! the row back and decides (see `db::rows`). An update that changes the
//! key also records the old key, so the old row leaves the index.
//!
//! The SQL runs unchanged on MySQL 8 and MariaDB (no `CREATE TRIGGER IF
//! NOT EXISTS`, which is MariaDB's; no `BEGIN … END`, so `--print` output
//! needs no `DELIMITER`), and has a SQLite form. Nothing in the user's
//! tables changes: chaja adds its own four tables and the triggers, and
//! `uninstall` removes exactly those.
//!
//! Before the first statement every source is checked against the
//! database (tables, columns, types, the filter), and a trigger that fails
//! to be created makes the ones created before it be dropped again, so an
//! install is all or nothing.

use crate::db::rows::misconfigured;
use crate::db::{Db, Dialect};
use crate::error::{Error, Result};
use crate::sources::{Source, Sources};

/// chaja's own tables, created by `install` (and by the demo's migrations).
const TABLES: [&str; 4] = [
    "search_outbox",
    "search_outbox_pruned",
    "search_replicas",
    "search_secrets",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Insert,
    Update,
    Delete,
}

const EVENTS: [Event; 3] = [Event::Insert, Event::Update, Event::Delete];

impl Event {
    fn sql(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }
}

/// The name of a source's trigger for `event`.
fn trigger_name(source: &Source, event: Event) -> String {
    format!("chaja_{}_{}", source.name, event.sql().to_ascii_lowercase())
}

fn tables_sql(dialect: Dialect) -> Vec<String> {
    let sql: &[&str] = match dialect {
        Dialect::MySql => &[
            "CREATE TABLE IF NOT EXISTS search_outbox (
    seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    entity_type VARCHAR(64) NOT NULL,
    entity_key VARCHAR(191) NULL,
    op VARCHAR(8) NOT NULL,
    created_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4",
            "CREATE TABLE IF NOT EXISTS search_replicas (
    replica_id VARCHAR(64) NOT NULL PRIMARY KEY,
    applied_seq BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE = InnoDB",
            "CREATE TABLE IF NOT EXISTS search_outbox_pruned (
    id INT NOT NULL PRIMARY KEY,
    pruned_through BIGINT NOT NULL
) ENGINE = InnoDB",
            "INSERT IGNORE INTO search_outbox_pruned (id, pruned_through) VALUES (1, 0)",
            "CREATE TABLE IF NOT EXISTS search_secrets (
    name VARCHAR(32) NOT NULL PRIMARY KEY,
    value VARCHAR(128) NOT NULL
) ENGINE = InnoDB",
        ],
        Dialect::Sqlite => &[
            "CREATE TABLE IF NOT EXISTS search_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_type TEXT NOT NULL,
    entity_key TEXT NULL,
    op TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
)",
            "CREATE TABLE IF NOT EXISTS search_replicas (
    replica_id TEXT NOT NULL PRIMARY KEY,
    applied_seq INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
)",
            "CREATE TABLE IF NOT EXISTS search_outbox_pruned (
    id INTEGER NOT NULL PRIMARY KEY,
    pruned_through INTEGER NOT NULL
)",
            "INSERT OR IGNORE INTO search_outbox_pruned (id, pruned_through) VALUES (1, 0)",
            "CREATE TABLE IF NOT EXISTS search_secrets (
    name TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
)",
        ],
    };
    sql.iter().map(|s| (*s).to_owned()).collect()
}

/// `CREATE TRIGGER` for one source and event.
fn trigger_sql(dialect: Dialect, source: &Source, event: Event) -> String {
    let name = &source.name;
    let id = format!("`{}`", source.id);
    let key = |row: &str| format!("CAST({row}.{id} AS CHAR)");
    let insert = "INSERT INTO search_outbox (entity_type, entity_key, op)";
    let body = match event {
        Event::Insert => format!("{insert} VALUES ('{name}', {}, 'upsert')", key("NEW")),
        Event::Delete => format!("{insert} VALUES ('{name}', {}, 'delete')", key("OLD")),
        // The old key too when the key itself changed: its row is gone.
        Event::Update => {
            let changed = match dialect {
                Dialect::MySql => format!("FROM DUAL WHERE NOT (OLD.{id} <=> NEW.{id})"),
                Dialect::Sqlite => format!("WHERE OLD.{id} IS NOT NEW.{id}"),
            };
            format!(
                "{insert} SELECT '{name}', {}, 'upsert' UNION ALL SELECT '{name}', {}, 'delete' {changed}",
                key("NEW"),
                key("OLD")
            )
        }
    };
    let trigger = trigger_name(source, event);
    let table = &source.table;
    let event = event.sql();
    match dialect {
        Dialect::MySql => {
            format!("CREATE TRIGGER `{trigger}` AFTER {event} ON `{table}` FOR EACH ROW {body}")
        }
        Dialect::Sqlite => format!(
            "CREATE TRIGGER `{trigger}` AFTER {event} ON `{table}` FOR EACH ROW BEGIN {body}; END"
        ),
    }
}

/// Every statement `install` runs, in order: what `--print` writes.
pub fn script(dialect: Dialect, sources: &Sources) -> Vec<String> {
    let mut statements = tables_sql(dialect);
    for source in sources.iter() {
        for event in EVENTS {
            statements.push(trigger_sql(dialect, source, event));
        }
    }
    statements
}

/// What `uninstall` runs: the triggers, then chaja's tables.
pub fn uninstall_script(sources: &Sources) -> Vec<String> {
    let mut statements: Vec<String> = sources
        .iter()
        .flat_map(|source| {
            EVENTS.map(|event| format!("DROP TRIGGER IF EXISTS `{}`", trigger_name(source, event)))
        })
        .collect();
    statements.extend(TABLES.map(|table| format!("DROP TABLE IF EXISTS {table}")));
    statements
}

/// Creates chaja's tables and every source's triggers, after checking the
/// sources against the database. Triggers already there are kept.
pub async fn install(db: &Db, sources: &Sources) -> Result<()> {
    for source in sources.iter() {
        check_source(db, source).await?;
    }
    // chaja's tables this install adds, to take back if a trigger fails.
    let mut new_tables = Vec::new();
    for table in TABLES {
        if table_columns(db, table).await?.is_empty() {
            new_tables.push(table);
        }
    }
    for statement in tables_sql(db.dialect) {
        sqlx::raw_sql(&statement).execute(&db.pool).await?;
    }
    let existing = triggers(db).await?;
    let mut created: Vec<String> = Vec::new();
    for source in sources.iter() {
        for event in EVENTS {
            let name = trigger_name(source, event);
            if existing.contains(&name) {
                continue;
            }
            let result = sqlx::raw_sql(&trigger_sql(db.dialect, source, event))
                .execute(&db.pool)
                .await;
            if let Err(e) = result {
                // All or nothing: a half-installed set would mirror some
                // changes and silently miss others.
                for name in &created {
                    let _ = sqlx::raw_sql(&format!("DROP TRIGGER IF EXISTS `{name}`"))
                        .execute(&db.pool)
                        .await;
                }
                for table in &new_tables {
                    let _ = sqlx::raw_sql(&format!("DROP TABLE IF EXISTS {table}"))
                        .execute(&db.pool)
                        .await;
                }
                return Err(trigger_error(source, &name, e));
            }
            created.push(name);
        }
    }
    Ok(())
}

/// Drops every source's triggers and chaja's tables.
pub async fn uninstall(db: &Db, sources: &Sources) -> Result<()> {
    for statement in uninstall_script(sources) {
        sqlx::raw_sql(&statement).execute(&db.pool).await?;
    }
    Ok(())
}

/// Fails, saying to run `chaja install`, unless the outbox and every
/// source's triggers are there: without them the index would silently
/// stop following the tables.
pub async fn check_installed(db: &Db, sources: &Sources) -> Result<()> {
    let existing = triggers(db).await?;
    let has_outbox = table_columns(db, "search_outbox")
        .await?
        .iter()
        .any(|(column, _)| column == "entity_key");
    for source in sources.iter() {
        let missing: Vec<String> = EVENTS
            .map(|event| trigger_name(source, event))
            .into_iter()
            .filter(|name| !existing.contains(name))
            .collect();
        if !has_outbox || !missing.is_empty() {
            return Err(misconfigured(
                source,
                format!(
                    "the outbox table or the triggers {} are not installed; run `chaja install --config <file>` (or `chaja install --print` for a DBA to apply)",
                    missing.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Trigger names in the current database.
async fn triggers(db: &Db) -> Result<Vec<String>> {
    let sql = match db.dialect {
        Dialect::MySql => {
            "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"
        }
        Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'trigger'",
    };
    let rows = sqlx::query(sql).fetch_all(&db.pool).await?;
    rows.iter().map(|r| crate::db::text(r, 0)).collect()
}

/// `(column, type)` of a table, lowercase types; empty when it is missing.
async fn table_columns(db: &Db, table: &str) -> Result<Vec<(String, String)>> {
    let (sql, bind) = match db.dialect {
        Dialect::MySql => (
            "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
                .to_owned(),
            true,
        ),
        // A table name cannot be bound in a PRAGMA; it was checked to be a
        // plain name.
        Dialect::Sqlite => (
            format!("SELECT name, type FROM pragma_table_info('{table}')"),
            false,
        ),
    };
    let mut query = sqlx::query(&sql);
    if bind {
        query = query.bind(table);
    }
    let rows = query.fetch_all(&db.pool).await?;
    let mut columns = Vec::with_capacity(rows.len());
    for row in &rows {
        columns.push((
            crate::db::text(row, 0)?,
            crate::db::text(row, 1)?.to_ascii_lowercase(),
        ));
    }
    Ok(columns)
}

/// Column types each role accepts (MySQL's `DATA_TYPE`; SQLite's declared
/// types are free text, so only existence is checked there).
const KEY_TYPES: &[&str] = &[
    "tinyint",
    "smallint",
    "mediumint",
    "int",
    "integer",
    "bigint",
    "char",
    "varchar",
    "binary",
    "varbinary",
];
const TIME_TYPES: &[&str] = &[
    "datetime",
    "timestamp",
    "date",
    "int",
    "integer",
    "bigint",
    "mediumint",
];
const TEXT_TYPES: &[&str] = &[
    "char",
    "varchar",
    "tinytext",
    "text",
    "mediumtext",
    "longtext",
    "json",
    "enum",
    "set",
];

/// A source's table, columns, their types and its filter, against the
/// database: each problem named with the source, the column and the fix.
pub async fn check_source(db: &Db, source: &Source) -> Result<()> {
    let columns = table_columns(db, &source.table).await?;
    if columns.is_empty() {
        return Err(misconfigured(
            source,
            "the table does not exist in this database; check `table` in the config and DATABASE_URL",
        ));
    }
    let type_of = |column: &str| {
        columns
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(column))
            .map(|(_, t)| t.as_str())
    };
    for column in source.columns() {
        if type_of(column).is_none() {
            return Err(misconfigured(
                source,
                format!(
                    "column `{column}` does not exist; the table has {}",
                    columns
                        .iter()
                        .map(|(n, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if db.dialect == Dialect::MySql {
        let roles = [
            ("id", std::slice::from_ref(&source.id), KEY_TYPES),
            (
                "created_at",
                std::slice::from_ref(&source.created_at),
                TIME_TYPES,
            ),
            ("fields", source.fields.as_slice(), TEXT_TYPES),
        ];
        for (role, names, accepted) in roles {
            for column in names {
                let found = type_of(column).unwrap_or_default();
                if !accepted.contains(&found) {
                    return Err(misconfigured(
                        source,
                        format!(
                            "column `{column}` ({role}) is {found}; it must be one of {}",
                            accepted.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(filter) = &source.filter {
        let sql = format!(
            "SELECT COUNT(*) FROM (SELECT 1 AS one FROM `{}` WHERE ({filter}) LIMIT 1) AS probe",
            source.table
        );
        if let Err(e) = sqlx::query(&sql).fetch_one(&db.pool).await {
            return Err(misconfigured(
                source,
                format!("filter {filter:?} does not run on this table: {e}"),
            ));
        }
    }
    Ok(())
}

/// A failed `CREATE TRIGGER`, explained: the privilege rules differ
/// between MySQL 8 with binary logging and MariaDB.
fn trigger_error(source: &Source, trigger: &str, e: sqlx::Error) -> Error {
    let number = match &e {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .map(|e| e.number()),
        _ => None,
    };
    let advice = match number {
        Some(1142) | Some(1227) => {
            "the database user lacks the TRIGGER privilege on this table: GRANT TRIGGER ON <db>.<table> TO <user>, or run `chaja install --print` and have a DBA apply it"
        }
        Some(1419) => {
            "binary logging is on and the user has no SUPER privilege (MySQL 8's rule for triggers): set log_bin_trust_function_creators = 1, grant SUPER (or SYSTEM_VARIABLES_ADMIN), or have a DBA apply `chaja install --print`"
        }
        _ => "no trigger of this source was left installed; fix the cause and run `chaja install` again",
    };
    misconfigured(
        source,
        format!("creating trigger `{trigger}` failed ({e}); {advice}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_triggers_are_single_statements() {
        let script = script(Dialect::MySql, &Sources::demo());
        let triggers: Vec<&String> = script
            .iter()
            .filter(|s| s.starts_with("CREATE TRIGGER"))
            .collect();
        assert_eq!(triggers.len(), 6);
        for t in triggers {
            assert!(!t.contains("BEGIN") && !t.contains("IF NOT EXISTS"), "{t}");
        }
    }
}
