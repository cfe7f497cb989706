//! The pool: MySQL in production, SQLite embedded.
//!
//! Both go through sqlx's `Any` driver with `?` placeholders and BIGINT
//! millisecond timestamps, so one set of queries serves both; only the
//! DDL (triggers, auto-increment) differs per dialect.

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Executor};

use crate::{Result, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    MySql,
    Sqlite,
}

impl Dialect {
    /// The dialect a connection of the `Any` pool speaks.
    pub fn of_connection(conn: &sqlx::AnyConnection) -> Dialect {
        match conn.backend_name() {
            "SQLite" => Dialect::Sqlite,
            _ => Dialect::MySql,
        }
    }

    /// The dialect a `DATABASE_URL` names.
    pub fn of_url(url: &str) -> Result<Dialect> {
        if url.starts_with("mysql:") || url.starts_with("mariadb:") {
            Ok(Dialect::MySql)
        } else if url.starts_with("sqlite:") {
            Ok(Dialect::Sqlite)
        } else {
            Err(StoreError::BadUrl)
        }
    }
}

/// A cheap, cloneable handle to the pool.
#[derive(Clone, Debug)]
pub struct Db {
    pub pool: AnyPool,
    pub dialect: Dialect,
}

impl Db {
    /// Connects lazily: the server starts and serves searches even when the
    /// database is down, and each query fails fast with a 503 until it is up.
    pub fn connect_lazy(url: &str, max_connections: u32) -> Result<Db> {
        sqlx::any::install_default_drivers();
        let dialect = Dialect::of_url(url)?;
        let url = url.replacen("mariadb:", "mysql:", 1);
        let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(3))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if dialect == Dialect::Sqlite {
                        // WAL lets searches-of-record (reads) run beside the one
                        // writer; the busy timeout queues writers instead of
                        // failing them.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        conn.execute("PRAGMA busy_timeout = 5000").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                    } else {
                        // TIMESTAMP columns read as UTC (see `rows`).
                        conn.execute("SET time_zone = '+00:00'").await?;
                    }
                    Ok(())
                })
            })
            .connect_lazy_with(options);
        Ok(Db { pool, dialect })
    }

    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// The secret `name`, generated and stored by the first caller: every
/// replica on this database gets the same one.
pub async fn secret(db: &Db, name: &str) -> Result<String> {
    let insert = match db.dialect {
        Dialect::MySql => "INSERT IGNORE INTO search_secrets (name, value) VALUES (?, ?)",
        Dialect::Sqlite => "INSERT OR IGNORE INTO search_secrets (name, value) VALUES (?, ?)",
    };
    sqlx::query(insert)
        .bind(name)
        .bind(random_secret())
        .execute(&db.pool)
        .await?;
    let row = sqlx::query("SELECT value FROM search_secrets WHERE name = ?")
        .bind(name)
        .fetch_one(&db.pool)
        .await?;
    text(&row, 0)
}

/// 256 random bits, hex.
pub fn random_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs an INSERT and returns the new row's id. The `Any` driver reports
/// the id for MySQL but not for SQLite, so SQLite asks on the same connection.
pub async fn insert<'q>(
    db: &Db,
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
) -> Result<i64> {
    let mut conn = db.pool.acquire().await?;
    let result = query.execute(&mut *conn).await?;
    if let Some(id) = result.last_insert_id() {
        return Ok(id);
    }
    let sql = match db.dialect {
        Dialect::MySql => "SELECT CAST(LAST_INSERT_ID() AS SIGNED)",
        Dialect::Sqlite => "SELECT last_insert_rowid()",
    };
    Ok(sqlx::query_scalar(sql).fetch_one(&mut *conn).await?)
}

/// Reads a text column. Through the `Any` driver MySQL reports TEXT columns
/// as BLOB, so the bytes are read and checked as UTF-8 there.
pub fn text<I: sqlx::ColumnIndex<sqlx::any::AnyRow>>(
    row: &sqlx::any::AnyRow,
    column: I,
) -> Result<String> {
    use sqlx::Row;
    let raw = row.try_get_raw(&column)?;
    let is_blob = sqlx::TypeInfo::name(sqlx::ValueRef::type_info(&raw).as_ref()) == "BLOB";
    if !is_blob {
        return Ok(row.try_get(column)?);
    }
    let bytes: Vec<u8> = row.try_get(column)?;
    String::from_utf8(bytes).map_err(|e| sqlx::Error::Decode(Box::new(e)).into())
}

/// Reads a column selected as bytes (`CAST(… AS BINARY)` or `AS BLOB`).
/// SQLite hands them over as a BLOB, so no byte can fail the fetch; MySQL
/// and MariaDB may still label the cast TEXT, in which case the driver has
/// decoded it already, which text from MySQL's utf8mb4 always survives.
pub(crate) fn bytes<I: sqlx::ColumnIndex<sqlx::any::AnyRow> + Copy>(
    row: &sqlx::any::AnyRow,
    column: I,
) -> Result<Vec<u8>> {
    use sqlx::Row;
    match row.try_get::<Vec<u8>, _>(column) {
        Ok(bytes) => Ok(bytes),
        Err(_) => Ok(row.try_get::<String, _>(column)?.into_bytes()),
    }
}

/// `?, ?, ?` for an `IN` list of `n` values.
pub(crate) fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}
