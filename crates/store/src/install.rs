//! `chaja install`: the outbox and its triggers, on the site's own database.
//!
//! Three triggers per source (after insert, update, delete) write the
//! changed row's key to `search_outbox` in the writer's own transaction;
//! they do not decide whether the row is searchable: the indexer reads the
//! row back and decides (see `rows`). The update trigger records a change
//! only when a column chaja reads differs between `OLD` and `NEW` (the
//! key, `created_at`, the fields, the attributes and the filter's columns;
//! see `watch`), byte for byte and NULL-safe, in the `INSERT … SELECT …
//! WHERE` (MySQL and MariaDB triggers have no `WHEN`), so a view counter's
//! `+ 1` writes nothing. An update that changes the key also records the
//! old key, so the old row leaves the index.
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

use sqlx::Row;

use crate::watch::{self, Watched};
use crate::{Db, Dialect};
use crate::{Result, StoreError};
use chaja_core::sources::{Source, Sources};

/// chaja's own tables, created by `install` (all but the last also by the
/// demo's migrations).
const TABLES: [&str; 5] = [
    "search_outbox",
    "search_outbox_pruned",
    "search_replicas",
    "search_secrets",
    "search_installed",
];

/// A configuration problem found in the database, naming the source.
fn misconfigured(source: &Source, what: impl std::fmt::Display) -> StoreError {
    StoreError::Misconfigured(format!(
        "source {:?} (table `{}`): {what}",
        source.name, source.table
    ))
}

/// Longest key text the outbox holds: a string key column must not be
/// longer, or the trigger's insert would fail the user's own write.
pub const MAX_KEY_CHARS: i64 = 512;

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
    entity_key VARCHAR(512) CHARACTER SET utf8mb4 NULL,
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
            "CREATE TABLE IF NOT EXISTS search_installed (
    source VARCHAR(64) NOT NULL PRIMARY KEY,
    definition VARCHAR(64) NOT NULL
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
            "CREATE TABLE IF NOT EXISTS search_installed (
    source TEXT NOT NULL PRIMARY KEY,
    definition TEXT NOT NULL
)",
        ],
    };
    sql.iter().map(|s| (*s).to_owned()).collect()
}

/// What a source's trigger for `event` runs: one statement. The update
/// trigger records the row only when a column in `watched` changed (byte
/// for byte, NULL-safe; see `watch`), and the old key too when the key
/// changed.
fn trigger_body(dialect: Dialect, source: &Source, event: Event, watched: &Watched) -> String {
    let name = &source.name;
    let id = format!("`{}`", source.id);
    // utf8mb4 whatever the connection that creates the trigger uses (a
    // DBA's latin1 client would otherwise turn Korean keys into `?`).
    let key = |row: &str| match dialect {
        Dialect::MySql => format!("CAST({row}.{id} AS CHAR CHARACTER SET utf8mb4)"),
        Dialect::Sqlite => format!("CAST({row}.{id} AS CHAR)"),
    };
    let insert = "INSERT INTO search_outbox (entity_type, entity_key, op)";
    match event {
        Event::Insert => format!("{insert} VALUES ('{name}', {}, 'upsert')", key("NEW")),
        Event::Delete => format!("{insert} VALUES ('{name}', {}, 'delete')", key("OLD")),
        // The old key too when the key itself changed, byte for byte (a
        // case-insensitive collation calls `abc` and `ABC` equal): its row
        // is gone.
        Event::Update => {
            let changed = match dialect {
                Dialect::MySql => {
                    format!("FROM DUAL WHERE NOT (CAST(OLD.{id} AS BINARY) <=> CAST(NEW.{id} AS BINARY))")
                }
                Dialect::Sqlite => {
                    format!("WHERE CAST(OLD.{id} AS BLOB) IS NOT CAST(NEW.{id} AS BLOB)")
                }
            };
            let same = |column: &str| match dialect {
                Dialect::MySql => {
                    format!("CAST(OLD.`{column}` AS BINARY) <=> CAST(NEW.`{column}` AS BINARY)")
                }
                Dialect::Sqlite => {
                    format!("CAST(OLD.`{column}` AS BLOB) IS CAST(NEW.`{column}` AS BLOB)")
                }
            };
            let upsert_when = match watched {
                Watched::Every { .. } => String::new(),
                Watched::Columns(columns) => {
                    let all: Vec<String> = columns.iter().map(|c| same(c)).collect();
                    let from = if dialect == Dialect::MySql {
                        " FROM DUAL"
                    } else {
                        ""
                    };
                    format!("{from} WHERE NOT ({})", all.join(" AND "))
                }
            };
            format!(
                "{insert} SELECT '{name}', {}, 'upsert'{upsert_when} UNION ALL SELECT '{name}', {}, 'delete' {changed}",
                key("NEW"),
                key("OLD")
            )
        }
    }
}

/// `CREATE TRIGGER` for one source and event.
fn trigger_sql(dialect: Dialect, source: &Source, event: Event, watched: &Watched) -> String {
    trigger_sql_named(
        dialect,
        source,
        event,
        watched,
        &trigger_name(source, event),
    )
}

/// [`trigger_sql`] under another name (an upgrade's stand-in).
fn trigger_sql_named(
    dialect: Dialect,
    source: &Source,
    event: Event,
    watched: &Watched,
    trigger: &str,
) -> String {
    let body = trigger_body(dialect, source, event, watched);
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

/// A fingerprint of a source's three triggers, recorded in
/// `search_installed`: what `serve` trusts when it may not see triggers.
fn definition(dialect: Dialect, source: &Source, watched: &Watched) -> String {
    let statements: Vec<String> = EVENTS
        .iter()
        .map(|e| trigger_sql(dialect, source, *e, watched))
        .collect();
    blake3::hash(statements.join("\n").as_bytes()).to_hex()[..16].to_owned()
}

/// Records a source's triggers as installed (MySQL and SQLite both read
/// `REPLACE INTO`).
fn record_sql(dialect: Dialect, source: &Source, watched: &Watched) -> String {
    format!(
        "REPLACE INTO search_installed (source, definition) VALUES ('{}', '{}')",
        source.name,
        definition(dialect, source, watched)
    )
}

/// Every statement `install` runs on an empty database, in order: what
/// `--print` writes. With no database to ask, the filter's words are
/// taken for columns (see `watch`); `install` checks them.
pub fn script(dialect: Dialect, sources: &Sources) -> Vec<String> {
    let mut statements = tables_sql(dialect);
    for source in sources.iter() {
        let watched = watch::watched(source, None);
        for event in EVENTS {
            statements.push(trigger_sql(dialect, source, event, &watched));
        }
        statements.push(record_sql(dialect, source, &watched));
    }
    statements
}

/// What `source`'s update trigger compares, its filter checked against the
/// table's columns; said once when every update must be recorded.
async fn watched_in(db: &Db, source: &Source) -> Result<Watched> {
    let columns: Vec<String> = table_columns(db, &source.table)
        .await?
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    Ok(watch::watched(source, Some(&columns)))
}

/// A stand-in trigger's name while an older one is replaced: short, so
/// that it fits MySQL's 64 characters whatever the source is called.
fn stand_in_name(source: &Source, event: Event) -> String {
    let hash = blake3::hash(trigger_name(source, event).as_bytes());
    format!("chaja_next_{}", &hash.to_hex()[..12])
}

/// Creates chaja's tables and every source's triggers, after checking the
/// sources against the database. Triggers already there are kept when
/// they are exactly what this configuration would create; chaja's own of
/// another version or configuration are upgraded (see `upgrade`); one
/// that is not chaja's stops the install first.
pub async fn install(db: &Db, sources: &Sources) -> Result<()> {
    let mut watched = Vec::with_capacity(sources.len());
    for source in sources.iter() {
        check_source(db, source).await?;
        let w = watched_in(db, source).await?;
        if let Watched::Every { why } = &w {
            tracing::warn!(
                source = source.name,
                "{why}: its update trigger records every update, whatever column changed"
            );
        }
        watched.push(w);
    }
    let found = triggers(db).await?;
    // chaja's own triggers of this name and table, made by an earlier
    // version or configuration: replaced below, without a moment in which
    // a write goes unrecorded.
    let mut upgrades: Vec<(usize, Event)> = Vec::new();
    for (i, source) in sources.iter().enumerate() {
        for event in EVENTS {
            let name = trigger_name(source, event);
            if let Some(other) = found.iter().find(|t| t.name == name) {
                if other.is(db.dialect, source, event, &watched[i]) {
                    continue;
                }
                if other.is_chajas() && other.table.eq_ignore_ascii_case(&source.table) {
                    upgrades.push((i, event));
                    continue;
                }
                return Err(misconfigured(
                    source,
                    format!(
                        "trigger `{name}` exists but is not chaja's for this table; DROP TRIGGER `{name}` (or rename yours), then install again"
                    ),
                ));
            }
        }
    }
    for stale in found.iter().filter(|t| t.is_chajas()) {
        let ours = sources
            .iter()
            .any(|s| EVENTS.iter().any(|e| trigger_name(s, *e) == stale.name));
        if !ours {
            tracing::warn!(
                trigger = stale.name,
                table = stale.table,
                "a chaja trigger of a source this config does not name; `chaja uninstall` removes it"
            );
        }
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
    let mut created: Vec<String> = Vec::new();
    for (i, source) in sources.iter().enumerate() {
        for event in EVENTS {
            let name = trigger_name(source, event);
            if found.iter().any(|t| t.name == name) {
                continue;
            }
            let result = sqlx::raw_sql(&trigger_sql(db.dialect, source, event, &watched[i]))
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
    for (i, event) in upgrades {
        let source = sources.iter().nth(i).expect("an upgrade names a source");
        upgrade(db, source, event, &watched[i]).await?;
    }
    // Recorded only once every trigger is in place: `check_installed` may
    // trust these records.
    for (i, source) in sources.iter().enumerate() {
        sqlx::raw_sql(&record_sql(db.dialect, source, &watched[i]))
            .execute(&db.pool)
            .await?;
    }
    Ok(())
}

/// Replaces chaja's older trigger for `event` with this version's. MySQL
/// cannot replace a trigger in one statement (and DDL commits at once), so
/// the new one goes in first under a stand-in name, both fire for a
/// moment (a change recorded twice is applied once: loading a row is
/// idempotent), then the old one goes, the new one takes its name, and the
/// stand-in goes: no write falls between two triggers.
async fn upgrade(db: &Db, source: &Source, event: Event, watched: &Watched) -> Result<()> {
    let name = trigger_name(source, event);
    let stand_in = stand_in_name(source, event);
    // One connection, in order: a pooled SQLite connection may not have
    // seen another's DROP yet.
    let mut conn = db.pool.acquire().await?;
    let steps = [
        (format!("DROP TRIGGER IF EXISTS `{stand_in}`"), &stand_in),
        (
            trigger_sql_named(db.dialect, source, event, watched, &stand_in),
            &stand_in,
        ),
        (format!("DROP TRIGGER IF EXISTS `{name}`"), &name),
        (trigger_sql(db.dialect, source, event, watched), &name),
        (format!("DROP TRIGGER IF EXISTS `{stand_in}`"), &stand_in),
    ];
    for (sql, trigger) in steps {
        sqlx::raw_sql(&sql)
            .execute(&mut *conn)
            .await
            .map_err(|e| trigger_error(source, trigger, e))?;
    }
    tracing::info!(
        trigger = name,
        "upgraded a trigger installed by an earlier version or configuration"
    );
    Ok(())
}

/// Drops every source's triggers, any other chaja trigger that writes to
/// the outbox (a source renamed since), then chaja's tables: no trigger
/// may outlive the table it inserts into, or the user's writes would fail.
pub async fn uninstall(db: &Db, sources: &Sources) -> Result<()> {
    let mut names: Vec<String> = sources
        .iter()
        .flat_map(|source| EVENTS.map(|event| trigger_name(source, event)))
        .collect();
    for found in triggers(db).await? {
        if found.is_chajas() && !names.contains(&found.name) {
            names.push(found.name);
        }
    }
    for name in names {
        sqlx::raw_sql(&format!("DROP TRIGGER IF EXISTS `{name}`"))
            .execute(&db.pool)
            .await?;
    }
    for table in TABLES {
        sqlx::raw_sql(&format!("DROP TABLE IF EXISTS {table}"))
            .execute(&db.pool)
            .await?;
    }
    Ok(())
}

/// Fails, saying to run `chaja install`, unless the outbox and every
/// source's triggers are there: without them the index would silently
/// stop following the tables. A user without the TRIGGER privilege sees
/// no triggers at all (MySQL lists only those it may manage); for a table
/// with none visible, the record `install` (or its `--print` script) left
/// in `search_installed` is trusted, when it matches this configuration.
pub async fn check_installed(db: &Db, sources: &Sources) -> Result<()> {
    let found = triggers(db).await?;
    let has_outbox = table_columns(db, "search_outbox")
        .await?
        .iter()
        .any(|(column, _, _)| column == "entity_key");
    let install =
        "run `chaja install --config <file>` (or `chaja install --print` for a DBA to apply)";
    for source in sources.iter() {
        if !has_outbox {
            return Err(misconfigured(
                source,
                format!("the outbox table is not installed; {install}"),
            ));
        }
        // Triggers this user cannot read: MariaDB lists them without
        // their statements; MySQL lists none to a user without the
        // TRIGGER privilege. Only then is the record trusted: a table
        // whose triggers are really gone (recreated by a migration tool)
        // must fail here.
        let on_table: Vec<&Trigger> = found
            .iter()
            .filter(|t| t.table.eq_ignore_ascii_case(&source.table))
            .collect();
        let unreadable = db.dialect == Dialect::MySql
            && if on_table.is_empty() {
                !may_see_triggers(db).await?
            } else {
                on_table.iter().all(|t| t.statement.is_none())
            };
        let watched = watched_in(db, source).await?;
        if unreadable && recorded(db, source, &watched).await? {
            tracing::info!(
                source = source.name,
                "cannot see this table's triggers (no TRIGGER privilege?); trusting the install record"
            );
            continue;
        }
        for event in EVENTS {
            let name = trigger_name(source, event);
            // Triggers of an earlier version, which record every update,
            // miss nothing: served, with a word to upgrade them.
            let every = Watched::Every { why: String::new() };
            match found.iter().find(|t| t.name == name) {
                Some(t) if t.is(db.dialect, source, event, &watched) => {}
                Some(t) if t.is(db.dialect, source, event, &every) => {
                    tracing::warn!(
                        source = source.name,
                        trigger = name,
                        "this trigger records every update, also of columns chaja does not read; run `chaja install` to upgrade it"
                    );
                }
                Some(_) => {
                    return Err(misconfigured(
                        source,
                        format!("trigger `{name}` was created for another configuration; run `chaja uninstall` with the old one, then `chaja install`"),
                    ))
                }
                None => {
                    return Err(misconfigured(
                        source,
                        format!("trigger `{name}` is not installed; {install}"),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Whether this MySQL user holds the TRIGGER privilege on the current
/// database (globally, on it, or on one of its tables): the privilege
/// views list the current user's own grants; schema grants may be
/// patterns (`site\_%`).
async fn may_see_triggers(db: &Db) -> Result<bool> {
    let count: i64 = sqlx::query_scalar(
        "SELECT CAST((SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER') \
         + (SELECT COUNT(*) FROM information_schema.SCHEMA_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND DATABASE() LIKE TABLE_SCHEMA) \
         + (SELECT COUNT(*) FROM information_schema.TABLE_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND TABLE_SCHEMA = DATABASE()) AS SIGNED)",
    )
    .fetch_one(&db.pool)
    .await?;
    Ok(count > 0)
}

/// Whether `search_installed` records this source's triggers as this
/// configuration defines them.
async fn recorded(db: &Db, source: &Source, watched: &Watched) -> Result<bool> {
    if table_columns(db, "search_installed").await?.is_empty() {
        return Ok(false);
    }
    let definition: Option<String> =
        sqlx::query_scalar("SELECT definition FROM search_installed WHERE source = ?")
            .bind(&source.name)
            .fetch_optional(&db.pool)
            .await?;
    Ok(definition.as_deref() == Some(&*self::definition(db.dialect, source, watched)))
}

/// A trigger as the database shows it.
struct Trigger {
    name: String,
    table: String,
    /// MySQL: the body; SQLite: the whole `CREATE TRIGGER`. `None` when
    /// the user may not read it (MariaDB lists the trigger, but not its
    /// statement, to a user without the TRIGGER privilege).
    statement: Option<String>,
}

impl Trigger {
    /// Whether it is exactly the trigger this source has for `event`.
    fn is(&self, dialect: Dialect, source: &Source, event: Event, watched: &Watched) -> bool {
        let expected = match dialect {
            Dialect::MySql => trigger_body(dialect, source, event, watched),
            Dialect::Sqlite => trigger_sql(dialect, source, event, watched),
        };
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        self.table.eq_ignore_ascii_case(&source.table)
            && self
                .statement
                .as_deref()
                .is_some_and(|s| words(s) == words(&expected))
    }

    /// A trigger some chaja install created (by its name alone when its
    /// statement cannot be read).
    fn is_chajas(&self) -> bool {
        self.name.starts_with("chaja_")
            && self
                .statement
                .as_deref()
                .is_none_or(|s| s.contains("search_outbox"))
    }
}

/// The triggers of the current database that this user may see.
async fn triggers(db: &Db) -> Result<Vec<Trigger>> {
    let sql = match db.dialect {
        Dialect::MySql => {
            "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_STATEMENT FROM information_schema.TRIGGERS \
             WHERE TRIGGER_SCHEMA = DATABASE()"
        }
        Dialect::Sqlite => "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'",
    };
    let rows = sqlx::query(sql).fetch_all(&db.pool).await?;
    let mut found = Vec::with_capacity(rows.len());
    for row in &rows {
        found.push(Trigger {
            name: crate::text(row, 0)?,
            table: crate::text(row, 1)?,
            statement: match sqlx::ValueRef::is_null(&row.try_get_raw(2)?) {
                true => None,
                false => Some(crate::text(row, 2)?),
            },
        });
    }
    Ok(found)
}

/// `(column, type, longest text)` of a table, lowercase types; empty when
/// it is missing.
async fn table_columns(db: &Db, table: &str) -> Result<Vec<(String, String, Option<i64>)>> {
    let (sql, bind) = match db.dialect {
        Dialect::MySql => (
            "SELECT COLUMN_NAME, DATA_TYPE, CAST(CHARACTER_MAXIMUM_LENGTH AS SIGNED) \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
                .to_owned(),
            true,
        ),
        // A table name cannot be bound in a PRAGMA; it was checked to be a
        // plain name.
        Dialect::Sqlite => (
            format!("SELECT name, type, NULL FROM pragma_table_info('{table}')"),
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
            crate::text(row, 0)?,
            crate::text(row, 1)?.to_ascii_lowercase(),
            row.try_get::<Option<i64>, _>(2).ok().flatten(),
        ));
    }
    Ok(columns)
}

/// Column types each role accepts (MySQL's `DATA_TYPE`; SQLite's declared
/// types are free text, so only existence is checked there). Keys are
/// read raw, and sqlx's `Any` driver reads these; binary keys (UUIDs in
/// `BINARY(16)`) would not be text in the outbox.
const KEY_TYPES: &[&str] = &["smallint", "int", "integer", "bigint", "char", "varchar"];
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
    let column_of = |column: &str| {
        columns
            .iter()
            .find(|(name, _, _)| name.eq_ignore_ascii_case(column))
    };
    for column in source.columns() {
        if column_of(column).is_none() {
            return Err(misconfigured(
                source,
                format!(
                    "column `{column}` does not exist; the table has {}",
                    columns
                        .iter()
                        .map(|(n, _, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if db.dialect == Dialect::MySql {
        let type_of = |column: &str| column_of(column).map_or("", |(_, t, _)| t.as_str());
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
                let found = type_of(column);
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
        // Attributes are read as text: binary data would not be.
        const BINARY_TYPES: &[&str] = &[
            "binary",
            "varbinary",
            "tinyblob",
            "blob",
            "mediumblob",
            "longblob",
            "bit",
            "geometry",
            "point",
            "linestring",
            "polygon",
        ];
        for column in &source.attributes {
            let found = type_of(column);
            if BINARY_TYPES.contains(&found) {
                return Err(misconfigured(
                    source,
                    format!("attribute `{column}` is {found}; attributes are read as text, so binary columns cannot be one"),
                ));
            }
        }
        if let Some((_, _, Some(longest))) = column_of(&source.id) {
            if *longest > MAX_KEY_CHARS {
                return Err(misconfigured(
                    source,
                    format!(
                        "key column `{}` holds up to {longest} characters; the outbox keeps keys of at most {MAX_KEY_CHARS}",
                        source.id
                    ),
                ));
            }
        }
        // A TIMESTAMP is an instant, read in UTC; a time zone would shift it.
        if type_of(&source.created_at) == "timestamp" && source.timezone.is_some() {
            return Err(misconfigured(
                source,
                format!(
                    "`{}` is a TIMESTAMP, which MySQL converts to UTC itself; `timezone` is for DATETIME columns, remove it",
                    source.created_at
                ),
            ));
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
fn trigger_error(source: &Source, trigger: &str, e: sqlx::Error) -> StoreError {
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
        let script = script(Dialect::MySql, &chaja_core::sources::for_tests());
        let triggers: Vec<&String> = script
            .iter()
            .filter(|s| s.starts_with("CREATE TRIGGER"))
            .collect();
        assert_eq!(triggers.len(), 6);
        for t in triggers {
            assert!(!t.contains("BEGIN") && !t.contains("IF NOT EXISTS"), "{t}");
        }
    }

    /// `--print` shows the comparison: the update trigger records a row
    /// only when a column chaja reads changed, byte for byte.
    #[test]
    fn the_update_trigger_compares_the_columns_chaja_reads() {
        let sources = chaja_core::sources::for_tests();
        for dialect in [Dialect::MySql, Dialect::Sqlite] {
            let script = script(dialect, &sources);
            let update = script
                .iter()
                .find(|s| s.starts_with("CREATE TRIGGER `chaja_post_update`"))
                .unwrap();
            for column in ["id", "created_at", "title", "body", "author_id"] {
                assert!(
                    update.contains(&format!("OLD.`{column}`")),
                    "{dialect:?}: {update}"
                );
            }
            let same = match dialect {
                Dialect::MySql => "<=>",
                Dialect::Sqlite => " IS CAST(NEW.",
            };
            assert!(update.contains(same), "{update}");
        }
    }
}
