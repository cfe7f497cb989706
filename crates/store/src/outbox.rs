//! What the indexer reads: the outbox and the current state of rows.

use sqlx::{AnyConnection, Row};

use crate::Result;
use crate::{text, Db};

/// A changed row: its source's name (`entity_type`) and its key as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub seq: i64,
    pub entity_type: String,
    pub key: String,
    /// The key was not valid UTF-8 (SQLite keeps any bytes a trigger
    /// casts): `key` reads it with U+FFFD and names no row.
    pub unreadable: bool,
}

/// One outbox row as the indexer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    pub seq: i64,
    /// When the trigger wrote it: with `seq`, it tells this row from another
    /// that reuses the id after a database restore.
    pub created_at: i64,
    /// `None` for a row without a key; the indexer also skips a source it
    /// does not know. Either is counted and still advances the position.
    pub change: Option<Change>,
    /// A probe (`op = 'probe'`): a row written only to time how soon the
    /// indexer applies what is written (`chaja loadtest --scenario
    /// counters`); it names no row and is skipped without a word.
    pub probe: bool,
}

/// The outbox's columns, the key as bytes: one key that is not valid
/// UTF-8 must not fail the read of every row beside it.
fn select_outbox(conn: &AnyConnection) -> &'static str {
    match crate::Dialect::of_connection(conn) {
        crate::Dialect::MySql => {
            "SELECT seq, entity_type, CAST(entity_key AS BINARY), created_at, op FROM search_outbox"
        }
        crate::Dialect::Sqlite => {
            "SELECT seq, entity_type, CAST(entity_key AS BLOB), created_at, op FROM search_outbox"
        }
    }
}

/// Changes after `seq`, oldest first.
pub async fn changes_after(
    conn: &mut AnyConnection,
    seq: i64,
    limit: i64,
) -> Result<Vec<OutboxRow>> {
    let sql = format!("{} WHERE seq > ? ORDER BY seq LIMIT ?", select_outbox(conn));
    let rows = sqlx::query(&sql)
        .bind(seq)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter().map(outbox_row).collect()
}

/// The rows that exist now in these inclusive ranges of ids (gaps that
/// got filled), a bounded number of ranges per statement.
pub async fn changes_in_ranges(
    conn: &mut AnyConnection,
    ranges: &[(i64, i64)],
) -> Result<Vec<OutboxRow>> {
    let mut found = Vec::new();
    for chunk in ranges.chunks(200) {
        let sql = format!(
            "{} WHERE {} ORDER BY seq",
            select_outbox(conn),
            in_ranges(chunk.len())
        );
        let rows = bind_ranges(sqlx::query(&sql), chunk)
            .fetch_all(&mut *conn)
            .await?;
        for row in &rows {
            found.push(outbox_row(row)?);
        }
    }
    Ok(found)
}

/// `seq BETWEEN ? AND ? OR …` for `n` inclusive ranges.
fn in_ranges(n: usize) -> String {
    vec!["seq BETWEEN ? AND ?"; n].join(" OR ")
}

fn bind_ranges<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ranges: &[(i64, i64)],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for (first, last) in ranges {
        query = query.bind(*first).bind(*last);
    }
    query
}

fn outbox_row(row: &sqlx::any::AnyRow) -> Result<OutboxRow> {
    let seq: i64 = row.try_get(0)?;
    let entity_type = text(row, 1)?;
    let key = match sqlx::ValueRef::is_null(&row.try_get_raw(2)?) {
        true => None,
        false => Some(match String::from_utf8(crate::db::bytes(row, 2)?) {
            Ok(key) => (key, false),
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
        }),
    };
    let created_at: i64 = row.try_get(3)?;
    let probe = text(row, 4)? == "probe";
    Ok(OutboxRow {
        seq,
        created_at,
        probe,
        change: key.filter(|_| !probe).map(|(key, unreadable)| Change {
            seq,
            entity_type,
            key,
            unreadable,
        }),
    })
}

/// Whether no transaction holds an uncommitted outbox row in any of these
/// inclusive ranges, so that every id there that is still missing after
/// this call was rolled back (see `mirror::indexer`, "Gaps").
///
/// MySQL: the inserting transaction holds a lock on its new row until it
/// ends, so a locking read that does not wait fails while one is open.
/// READ COMMITTED keeps the read to the rows themselves, with no gap locks
/// that could make a writer wait; the locks go with the transaction at
/// once. SQLite runs one write transaction at a time: an id missing below
/// a committed one can never appear, so every gap is settled.
pub async fn ranges_settled(db: &Db, ranges: &[(i64, i64)]) -> Result<bool> {
    if db.dialect == crate::Dialect::Sqlite || ranges.is_empty() {
        return Ok(true);
    }
    let sql = format!(
        "SELECT seq FROM search_outbox WHERE {} FOR UPDATE NOWAIT",
        in_ranges(ranges.len())
    );
    let query = bind_ranges(sqlx::query(&sql), ranges);
    let mut conn = read_committed(db).await?;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    let locked = query.fetch_all(&mut *tx).await;
    tx.rollback().await?;
    match locked {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(e)) if is_lock_conflict(e.as_ref()) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A lock another transaction holds: MySQL 8's NOWAIT error (3572),
/// MariaDB's (a lock wait timeout, 1205), or a deadlock (1213).
fn is_lock_conflict(e: &dyn sqlx::error::DatabaseError) -> bool {
    e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .is_some_and(|e| matches!(e.number(), 3572 | 1205 | 1213))
}

/// A pooled connection whose next transaction runs in READ COMMITTED.
async fn read_committed(db: &Db) -> Result<sqlx::pool::PoolConnection<sqlx::Any>> {
    let mut conn = db.pool.acquire().await?;
    if db.dialect == crate::Dialect::MySql {
        // A plain string goes by the text protocol, as `SET TRANSACTION`
        // must; it applies to the next transaction only.
        sqlx::Executor::execute(&mut *conn, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            .await?;
    }
    Ok(conn)
}

/// Whether the outbox no longer holds the history the index applied: its
/// ids restarted below `high` (a restored backup, or SQLite that lost its
/// last commits), so new changes would hide below the applied position.
/// `high_created_at` is when the row at `high` was written, when known.
pub async fn rewound(db: &Db, high: i64, high_created_at: Option<i64>) -> Result<bool> {
    if high <= 0 {
        return Ok(false);
    }
    let at_high: Option<i64> =
        sqlx::query_scalar("SELECT created_at FROM search_outbox WHERE seq = ?")
            .bind(high)
            .fetch_optional(&db.pool)
            .await?;
    if let Some(created_at) = at_high {
        // Another row under the same id: written after a restore.
        return Ok(high_created_at.is_some_and(|known| known != created_at));
    }
    let pruned = pruned_through(db).await?;
    if high_created_at.is_none() {
        // A checkpoint of an older version, which could record an id that
        // never committed: only an outbox that ends below it is rewound.
        return Ok(max_seq(db).await?.max(pruned) < high);
    }
    // Gone: only pruning deletes outbox rows.
    Ok(pruned < high)
}

/// The newest outbox position, 0 when empty.
pub async fn max_seq(db: &Db) -> Result<i64> {
    let max: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM search_outbox")
        .fetch_one(&db.pool)
        .await?;
    Ok(max.unwrap_or(0))
}

/// How many outbox rows are after `applied`, and when the oldest of them
/// was written.
pub async fn backlog(db: &Db, applied: i64) -> Result<(i64, Option<i64>)> {
    let row = sqlx::query("SELECT COUNT(*), MIN(created_at) FROM search_outbox WHERE seq > ?")
        .bind(applied)
        .fetch_one(&db.pool)
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// Records how far this replica has applied the outbox.
pub async fn heartbeat(db: &Db, replica: &str, applied: i64) -> Result<()> {
    let sql = match db.dialect {
        crate::Dialect::MySql => {
            "INSERT INTO search_replicas (replica_id, applied_seq, updated_at) VALUES (?, ?, ?) \
             ON DUPLICATE KEY UPDATE applied_seq = VALUES(applied_seq), updated_at = VALUES(updated_at)"
        }
        crate::Dialect::Sqlite => {
            "INSERT INTO search_replicas (replica_id, applied_seq, updated_at) VALUES (?, ?, ?) \
             ON CONFLICT (replica_id) DO UPDATE SET applied_seq = excluded.applied_seq, updated_at = excluded.updated_at"
        }
    };
    sqlx::query(sql)
        .bind(replica)
        .bind(applied)
        .bind(chaja_core::clock::now_ms())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Every replica (and rebuild) that has reported its position: name,
/// applied outbox position and when, in epoch milliseconds. At most 100,
/// most recent first.
pub async fn replicas(db: &Db) -> Result<Vec<(String, i64, i64)>> {
    let rows = sqlx::query(
        "SELECT replica_id, applied_seq, updated_at FROM search_replicas \
         ORDER BY updated_at DESC LIMIT 100",
    )
    .fetch_all(&db.pool)
    .await?;
    let mut replicas = Vec::with_capacity(rows.len());
    for row in &rows {
        replicas.push((text(row, 0)?, row.try_get(1)?, row.try_get(2)?));
    }
    Ok(replicas)
}

/// Batches one `prune` call deletes at most.
const PRUNE_BATCHES: usize = 10;

/// Everything at or below this was pruned: a replica behind it missed rows.
pub async fn pruned_through(db: &Db) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT pruned_through FROM search_outbox_pruned WHERE id = 1")
            .fetch_optional(&db.pool)
            .await?
            .unwrap_or(0),
    )
}

/// Deletes outbox rows that every replica seen within `window_ms` has
/// applied, `batch` ids at a time and at most `PRUNE_BATCHES` batches a
/// call (the indexer's loop waits for it; the rest goes next time), keeping
/// `keep` rows of history. Returns the rows deleted.
pub async fn prune(db: &Db, window_ms: i64, keep: i64, batch: i64) -> Result<u64> {
    let since = chaja_core::clock::now_ms() - window_ms;
    let lowest: Option<i64> =
        sqlx::query_scalar("SELECT MIN(applied_seq) FROM search_replicas WHERE updated_at >= ?")
            .bind(since)
            .fetch_one(&db.pool)
            .await?;
    let Some(lowest) = lowest else { return Ok(0) };
    let target = lowest - keep;
    let mut from = pruned_through(db).await?;
    let mut deleted = 0;
    let mut batches = 0;
    while from < target && batches < PRUNE_BATCHES {
        batches += 1;
        let to = (from + batch).min(target);
        // READ COMMITTED: the range's rows only, no gap locks that would
        // hold up inserts at the head of the outbox.
        let mut conn = read_committed(db).await?;
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        deleted += sqlx::query("DELETE FROM search_outbox WHERE seq > ? AND seq <= ?")
            .bind(from)
            .bind(to)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        // Never backwards, though several replicas prune.
        sqlx::query(
            "UPDATE search_outbox_pruned SET pruned_through = ? WHERE id = 1 AND pruned_through < ?",
        )
        .bind(to)
        .bind(to)
        .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        from = to;
    }
    Ok(deleted)
}

/// Holds back pruning for a rebuild that will resume from `applied`: it
/// counts as a replica until the generation it builds is adopted (and the
/// adopting replica removes the row) or it stops reporting.
pub async fn hold_for_rebuild(db: &Db, name: &str, applied: i64) -> Result<()> {
    heartbeat(db, name, applied).await
}

/// Removes a replica row, such as a rebuild's once its generation is live.
pub async fn release(db: &Db, name: &str) -> Result<()> {
    sqlx::query("DELETE FROM search_replicas WHERE replica_id = ?")
        .bind(name)
        .execute(&db.pool)
        .await?;
    Ok(())
}
