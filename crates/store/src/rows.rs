//! Reading a source's rows: by key for the indexer, by pages for rebuilds
//! and `verify`.
//!
//! One query shape serves MySQL, MariaDB and SQLite: names are quoted with
//! backticks (SQLite accepts them too), and every column but the raw key is
//! read as text (`CAST(… AS CHAR)`): sqlx's `Any` driver decodes only a few
//! column types, and a single other one (a TINYINT flag, a DECIMAL price, a
//! JSON body) would fail every load of the source. `created_at` comes as
//! `2025-03-01 10:00:00.123456` from DATETIME(6) and TIMESTAMP (read in the
//! session time zone, set to UTC on connect), or digits from epoch columns,
//! converted in one place ([`parse_time`]). The key's text is the same
//! `CAST` the triggers write, so that the two always agree; the raw key
//! only says whether the hit's `id` is a number.
//!
//! A row that fails the source's `filter` reads as absent, so that the
//! indexer deletes it: a soft delete leaves the index, an un-delete enters
//! it again.
//!
//! # A row that cannot be read
//!
//! The `Any` driver decodes every value of a row when the row is fetched,
//! so one TEXT value holding invalid UTF-8 (SQLite takes any bytes; MySQL
//! hands a BLOB field's bytes through) used to fail the statement, and with
//! it the indexer's whole batch, every round, for every source. So every
//! column but the raw key is selected as bytes (`CAST(CAST(c AS CHAR) AS
//! BINARY)`, SQLite's `CAST(CAST(c AS TEXT) AS BLOB)`) and decoded here
//! (MySQL and MariaDB may label the cast text and decode it themselves;
//! their utf8mb4 text is always valid, so only SQLite needs the bytes):
//!
//! - text with invalid bytes is read lossily, each invalid sequence
//!   becoming U+FFFD: the row is indexed, and its valid text is found as
//!   `LIKE` finds it (no keyword typed in a search can hold the invalid
//!   bytes, which are refused in queries). [`Loaded::Doc::lossy`] says so,
//!   for a log line and a counter.
//! - a key that is not valid UTF-8 cannot be read at all: the outbox, the
//!   index and deletes all name a row by its key's text. Such a row is
//!   [`Loaded::Unreadable`]: not indexed, and reported with its source and
//!   its key as far as it reads.

use sqlx::{AnyConnection, Row};

use crate::db::{bytes, placeholders, Db};
use crate::{Dialect, Result};
use chaja_core::model::{AttrValue, Doc, Key};
use chaja_core::sources::{Source, SourceId, Sources, TimeUnit};

/// `name` quoted as an identifier; names are checked to be plain words
/// (`sources::check`), so no quote can occur in one.
fn quoted(name: &str) -> String {
    format!("`{name}`")
}

/// A column's text as bytes, which no value can fail to decode (see the
/// module's "A row that cannot be read").
fn as_bytes(dialect: Dialect, column: &str) -> String {
    match dialect {
        Dialect::MySql => format!("CAST(CAST({} AS CHAR) AS BINARY)", quoted(column)),
        Dialect::Sqlite => format!("CAST(CAST({} AS TEXT) AS BLOB)", quoted(column)),
    }
}

/// Columns before the text fields: the key's kind, its text, `created_at`.
const FIRST_FIELD: usize = 3;

/// `SELECT <kind of key>, key, created_at, fields…, attributes… FROM table`,
/// all but the first as bytes. The first tells an integer key: on MySQL the
/// raw column, whose type says it (a MySQL key is always valid text: keys
/// are utf8mb4 or integers, never binary); on SQLite, where a value's own
/// type is what counts and a TEXT key may hold any bytes, `typeof`.
fn select(dialect: Dialect, source: &Source) -> String {
    let kind = match dialect {
        Dialect::MySql => quoted(&source.id),
        Dialect::Sqlite => format!("typeof({}) = 'integer'", quoted(&source.id)),
    };
    let mut columns = vec![
        kind,
        as_bytes(dialect, &source.id),
        as_bytes(dialect, &source.created_at),
    ];
    columns.extend(source.fields.iter().map(|f| as_bytes(dialect, f)));
    columns.extend(source.attributes.iter().map(|a| as_bytes(dialect, a)));
    format!(
        "SELECT {} FROM {}",
        columns.join(", "),
        quoted(&source.table)
    )
}

/// A row as loaded: its document, or why it cannot be one.
#[derive(Debug, Clone, PartialEq)]
pub enum Loaded {
    Doc {
        doc: Doc,
        /// Some text held invalid UTF-8 and was read with U+FFFD.
        lossy: bool,
    },
    Unreadable(Unreadable),
}

/// A row the index cannot hold (see the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub source: SourceId,
    /// The key as far as it reads (invalid bytes as U+FFFD): for people.
    pub key: String,
    pub reason: String,
}

impl Loaded {
    /// The key text the row is known by (as far as it reads).
    pub fn key_text(&self) -> String {
        match self {
            Loaded::Doc { doc, .. } => doc.key.text(),
            Loaded::Unreadable(u) => u.key.clone(),
        }
    }
}

/// ` AND (filter)`, or nothing.
fn visible(source: &Source) -> String {
    source
        .filter
        .as_ref()
        .map_or_else(String::new, |f| format!(" AND ({f})"))
}

/// The current, visible rows of `source` among these keys (as the outbox
/// writes them); a key not returned is deleted or hidden.
pub async fn load_docs(
    conn: &mut AnyConnection,
    sources: &Sources,
    id: SourceId,
    keys: &[String],
) -> Result<Vec<Loaded>> {
    let dialect = Dialect::of_connection(conn);
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let source = sources.get(id);
    let mut docs = Vec::with_capacity(keys.len());
    // Bounded statements: MySQL allows 65,535 placeholders.
    for chunk in keys.chunks(1000) {
        let sql = format!(
            "{} WHERE {} IN ({}){}",
            select(dialect, source),
            quoted(&source.id),
            placeholders(chunk.len()),
            visible(source)
        );
        let mut query = sqlx::query(&sql);
        for key in chunk {
            query = query.bind(key.as_str());
        }
        for row in query.fetch_all(&mut *conn).await? {
            docs.push(doc_from_row(dialect, source, id, &row)?);
        }
    }
    Ok(docs)
}

/// Where a keyset page starts: after this key, compared as the column's
/// own value (an integer, or the key's exact bytes, which need not be
/// valid text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageKey {
    Int(i64),
    Bytes(Vec<u8>),
}

/// One keyset page: its rows, and where the next one starts (`None`: this
/// was the last).
#[derive(Debug, Default)]
pub struct Page {
    pub rows: Vec<Loaded>,
    pub next: Option<PageKey>,
}

/// One keyset page of visible rows with a key above `after`, by key.
/// Rebuilds stream tables with it; `OFFSET` would rescan everything skipped
/// on every page.
pub async fn docs_page(
    db: &Db,
    sources: &Sources,
    id: SourceId,
    after: Option<&PageKey>,
    limit: i64,
) -> Result<Page> {
    let source = sources.get(id);
    let key = quoted(&source.id);
    let text = match db.dialect {
        Dialect::MySql => "CHAR",
        Dialect::Sqlite => "TEXT",
    };
    let from = match after {
        None => "1 = 1".to_owned(),
        Some(PageKey::Int(_)) => format!("{key} > ?"),
        // The bytes as the column's text, unchecked, so a key that is not
        // valid UTF-8 still pages past itself.
        Some(PageKey::Bytes(_)) => format!("{key} > CAST(? AS {text})"),
    };
    let sql = format!(
        "{} WHERE {from}{} ORDER BY {key} LIMIT ?",
        select(db.dialect, source),
        visible(source)
    );
    let mut query = sqlx::query(&sql);
    match after {
        Some(PageKey::Int(i)) => query = query.bind(*i),
        Some(PageKey::Bytes(b)) => query = query.bind(b.clone()),
        None => {}
    }
    let fetched = query.bind(limit).fetch_all(&db.pool).await?;
    let next = match fetched.last() {
        Some(last) if fetched.len() as i64 == limit => Some(page_key(db.dialect, last)?),
        _ => None,
    };
    let rows = fetched
        .iter()
        .map(|r| doc_from_row(db.dialect, source, id, r))
        .collect::<Result<_>>()?;
    Ok(Page { rows, next })
}

/// The key of a fetched row, as the next page compares it.
fn page_key(dialect: Dialect, row: &sqlx::any::AnyRow) -> Result<PageKey> {
    let bytes = key_bytes(row)?;
    if integer_key(dialect, row)? {
        if let Some(i) = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.parse().ok())
        {
            return Ok(PageKey::Int(i));
        }
    }
    Ok(PageKey::Bytes(bytes))
}

/// Visible rows of a source.
pub async fn count_rows(db: &Db, source: &Source) -> Result<i64> {
    let sql = format!(
        "SELECT COUNT(*) FROM {} WHERE 1 = 1{}",
        quoted(&source.table),
        visible(source)
    );
    Ok(sqlx::query_scalar(&sql).fetch_one(&db.pool).await?)
}

/// Whether the row's key column is an integer one (see [`select`]).
fn integer_key(dialect: Dialect, row: &sqlx::any::AnyRow) -> Result<bool> {
    Ok(match dialect {
        Dialect::MySql => {
            // The `Any` driver sign-extends unsigned ones, so its type, not
            // its value.
            let raw = row.try_get_raw(0)?;
            matches!(
                sqlx::TypeInfo::name(sqlx::ValueRef::type_info(&raw).as_ref()),
                "SMALLINT" | "INTEGER" | "BIGINT"
            )
        }
        Dialect::Sqlite => row.try_get::<i64, _>(0)? == 1,
    })
}

fn key_bytes(row: &sqlx::any::AnyRow) -> Result<Vec<u8>> {
    bytes(row, 1)
}

fn doc_from_row(
    dialect: Dialect,
    source: &Source,
    id: SourceId,
    row: &sqlx::any::AnyRow,
) -> Result<Loaded> {
    // The triggers' text of the key; a number only when it reads back the
    // same (not an unsigned value past i64, not ZEROFILL's `0007`).
    let key_text = match String::from_utf8(key_bytes(row)?) {
        Ok(text) => text,
        Err(e) => {
            return Ok(Loaded::Unreadable(Unreadable {
                source: id,
                key: String::from_utf8_lossy(e.as_bytes()).into_owned(),
                reason: format!("its key ({}) is not valid UTF-8", source.id),
            }))
        }
    };
    let key = match key_text.parse::<i64>() {
        Ok(i) if integer_key(dialect, row)? && i.to_string() == key_text => Key::Int(i),
        _ => Key::Str(key_text),
    };
    let mut lossy = false;
    let mut read = |i: usize| -> Result<Option<String>> {
        let Some((text, replaced)) = nullable_text(row, i)? else {
            return Ok(None);
        };
        lossy |= replaced;
        Ok(Some(text))
    };
    let created = read(2)?;
    let parsed = match created.as_deref() {
        Some(value) => parse_time(value, source),
        None => Err("created_at is NULL".to_owned()),
    };
    let created_at = parsed.unwrap_or_else(|problem| {
        // Indexed at the epoch rather than lost: it sorts last, and the
        // log names the row.
        tracing::warn!(
            source = source.name,
            key = key.text(),
            column = source.created_at,
            "{problem}; indexing the row with created_at 1970-01-01"
        );
        0
    });
    let mut texts = Vec::with_capacity(source.fields.len());
    for i in 0..source.fields.len() {
        texts.push(read(FIRST_FIELD + i)?);
    }
    let (title, body) = if source.has_title() {
        let mut texts = texts.into_iter();
        let title = texts.next().flatten();
        (title, texts.flatten().collect())
    } else {
        (None, texts.into_iter().flatten().collect())
    };
    let first_attribute = FIRST_FIELD + source.fields.len();
    let mut attributes = Vec::with_capacity(source.attributes.len());
    for (i, name) in source.attributes.iter().enumerate() {
        let value = attribute(read(first_attribute + i)?);
        // Indexed as missing in the number column (see
        // `chaja_index::attributes`), never a failed batch.
        if source.numeric.contains(name) && value != AttrValue::Null && value.number().is_none() {
            tracing::warn!(
                source = source.name,
                key = key.text(),
                attribute = name,
                "a numeric attribute holds no number; indexed as missing"
            );
        }
        attributes.push((name.clone(), value));
    }
    if lossy {
        tracing::warn!(
            source = source.name,
            key = key.text(),
            "the row holds text that is not valid UTF-8; indexed with U+FFFD in its place"
        );
    }
    Ok(Loaded::Doc {
        doc: Doc {
            source: id,
            key,
            title,
            body,
            created_at,
            attributes,
        },
        lossy,
    })
}

/// A column read as bytes, decoded: `None` for NULL, else the text and
/// whether invalid bytes were replaced.
fn nullable_text(row: &sqlx::any::AnyRow, i: usize) -> Result<Option<(String, bool)>> {
    if sqlx::ValueRef::is_null(&row.try_get_raw(i)?) {
        return Ok(None);
    }
    Ok(Some(match String::from_utf8(bytes(row, i)?) {
        Ok(text) => (text, false),
        Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
    }))
}

/// An attribute read as text: a number when it is one, written the way
/// Rust writes it back (so `7`, but not `007` or `7.50`), else a string.
fn attribute(text: Option<String>) -> AttrValue {
    match text {
        None => AttrValue::Null,
        Some(text) => match text.parse::<i64>() {
            Ok(n) if n.to_string() == text => AttrValue::Int(n),
            _ => AttrValue::Str(text),
        },
    }
}

/// Epoch milliseconds of a `created_at` value read as text.
pub fn parse_time(value: &str, source: &Source) -> std::result::Result<i64, String> {
    let value = value.trim();
    let integer = value.parse::<i64>().ok();
    let unit = source.time_unit.unwrap_or(match integer {
        Some(n) if n.unsigned_abs() < 100_000_000_000 => TimeUnit::Seconds,
        Some(_) => TimeUnit::Milliseconds,
        None => TimeUnit::DateTime,
    });
    match (unit, integer) {
        (TimeUnit::Seconds, Some(n)) => Ok(n.saturating_mul(1000)),
        (TimeUnit::Milliseconds, Some(n)) => Ok(n),
        (TimeUnit::DateTime, _) => parse_datetime(value, source.timezone.as_ref()),
        (_, None) => Err(format!(
            "created_at {value:?} is not an integer, as created_at_unit says"
        )),
    }
}

/// `2025-03-01 10:00:00[.ffffff]` (MySQL, MariaDB, SQLite's usual text),
/// with a `T` or an offset too: in `timezone` (UTC without one) unless
/// the value carries its own offset.
fn parse_datetime(
    value: &str,
    timezone: Option<&jiff::tz::TimeZone>,
) -> std::result::Result<i64, String> {
    if let Ok(instant) = value.parse::<jiff::Timestamp>() {
        return Ok(instant.as_millisecond());
    }
    let civil: jiff::civil::DateTime = value
        .parse()
        .map_err(|e| format!("created_at {value:?} is not a date and time: {e}"))?;
    let zoned = match timezone {
        Some(tz) => civil.to_zoned(tz.clone()),
        None => civil.to_zoned(jiff::tz::TimeZone::UTC),
    }
    .map_err(|e| format!("created_at {value:?}: {e}"))?;
    Ok(zoned.timestamp().as_millisecond())
}
