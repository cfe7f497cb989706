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

use sqlx::{AnyConnection, Row};

use crate::db::{placeholders, text, Db};
use crate::Result;
use chaja_core::model::{AttrValue, Doc, Key};
use chaja_core::sources::{Source, SourceId, Sources, TimeUnit};

/// `name` quoted as an identifier; names are checked to be plain words
/// (`sources::check`), so no quote can occur in one.
fn quoted(name: &str) -> String {
    format!("`{name}`")
}

/// `CAST(column AS CHAR)`.
fn as_text(column: &str) -> String {
    format!("CAST({} AS CHAR)", quoted(column))
}

/// Columns before the text fields: the raw key, its text, `created_at`.
const FIRST_FIELD: usize = 3;

/// `SELECT id, CAST(id), CAST(created_at), CAST(fields)…, CAST(attributes)… FROM table`.
fn select(source: &Source) -> String {
    let mut columns = vec![
        quoted(&source.id),
        as_text(&source.id),
        as_text(&source.created_at),
    ];
    columns.extend(source.fields.iter().map(|f| as_text(f)));
    columns.extend(source.attributes.iter().map(|a| as_text(a)));
    format!(
        "SELECT {} FROM {}",
        columns.join(", "),
        quoted(&source.table)
    )
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
) -> Result<Vec<Doc>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let source = sources.get(id);
    let mut docs = Vec::with_capacity(keys.len());
    // Bounded statements: MySQL allows 65,535 placeholders.
    for chunk in keys.chunks(1000) {
        let sql = format!(
            "{} WHERE {} IN ({}){}",
            select(source),
            quoted(&source.id),
            placeholders(chunk.len()),
            visible(source)
        );
        let mut query = sqlx::query(&sql);
        for key in chunk {
            query = query.bind(key.as_str());
        }
        for row in query.fetch_all(&mut *conn).await? {
            docs.push(doc_from_row(source, id, &row)?);
        }
    }
    Ok(docs)
}

/// One keyset page of visible rows with a key above `after`, by key.
/// Rebuilds stream tables with it; `OFFSET` would rescan everything skipped
/// on every page.
pub async fn docs_page(
    db: &Db,
    sources: &Sources,
    id: SourceId,
    after: Option<&Key>,
    limit: i64,
) -> Result<Vec<Doc>> {
    let source = sources.get(id);
    let key = quoted(&source.id);
    let from = if after.is_some() {
        format!("{key} > ?")
    } else {
        "1 = 1".to_owned()
    };
    let sql = format!(
        "{} WHERE {from}{} ORDER BY {key} LIMIT ?",
        select(source),
        visible(source)
    );
    let mut query = sqlx::query(&sql);
    match after {
        Some(Key::Int(i)) => query = query.bind(*i),
        Some(Key::Str(s)) => query = query.bind(s.clone()),
        None => {}
    }
    let rows = query.bind(limit).fetch_all(&db.pool).await?;
    rows.iter().map(|r| doc_from_row(source, id, r)).collect()
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

fn doc_from_row(source: &Source, id: SourceId, row: &sqlx::any::AnyRow) -> Result<Doc> {
    // The triggers' text of the key; a number only when it reads back the
    // same (not an unsigned value past i64, not ZEROFILL's `0007`).
    // The raw value says whether the column is an integer (the `Any`
    // driver sign-extends unsigned ones, so not its value).
    let key_text = text(row, 1)?;
    let raw = row.try_get_raw(0)?;
    let integer_column = matches!(
        sqlx::TypeInfo::name(sqlx::ValueRef::type_info(&raw).as_ref()),
        "SMALLINT" | "INTEGER" | "BIGINT"
    );
    let key = match key_text.parse::<i64>() {
        Ok(i) if integer_column && i.to_string() == key_text => Key::Int(i),
        _ => Key::Str(key_text),
    };
    let created = nullable_text(row, 2)?;
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
        texts.push(nullable_text(row, FIRST_FIELD + i)?);
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
        attributes.push((name.clone(), attribute(row, first_attribute + i)?));
    }
    Ok(Doc {
        source: id,
        key,
        title,
        body,
        created_at,
        attributes,
    })
}

/// A column read as text (`CAST(… AS CHAR)`), or `None` for NULL.
fn nullable_text(row: &sqlx::any::AnyRow, i: usize) -> Result<Option<String>> {
    if sqlx::ValueRef::is_null(&row.try_get_raw(i)?) {
        return Ok(None);
    }
    text(row, i).map(Some)
}

/// An attribute read as text: a number when it is one, written the way
/// Rust writes it back (so `7`, but not `007` or `7.50`), else a string.
fn attribute(row: &sqlx::any::AnyRow, i: usize) -> Result<AttrValue> {
    Ok(match nullable_text(row, i)? {
        None => AttrValue::Null,
        Some(text) => match text.parse::<i64>() {
            Ok(n) if n.to_string() == text => AttrValue::Int(n),
            _ => AttrValue::Str(text),
        },
    })
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
