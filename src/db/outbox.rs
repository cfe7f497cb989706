//! What the indexer reads: the outbox and the current state of rows.

use sqlx::{AnyConnection, Row};

use super::{placeholders, text, Db};
use crate::error::Result;
use crate::model::{Doc, Kind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub seq: i64,
    pub kind: Kind,
    pub id: i64,
}

/// Changes after `seq`, oldest first. Unknown entity types are skipped (and
/// still advance the position).
pub async fn changes_after(
    conn: &mut AnyConnection,
    seq: i64,
    limit: i64,
) -> Result<Vec<(i64, Option<Change>)>> {
    let rows = sqlx::query(
        "SELECT seq, entity_type, entity_id FROM search_outbox WHERE seq > ? ORDER BY seq LIMIT ?",
    )
    .bind(seq)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(change_from_row).collect()
}

/// The changes among `seqs` that exist now (gaps that got filled).
pub async fn changes_in(
    conn: &mut AnyConnection,
    seqs: &[i64],
) -> Result<Vec<(i64, Option<Change>)>> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT seq, entity_type, entity_id FROM search_outbox WHERE seq IN ({}) ORDER BY seq",
        placeholders(seqs.len())
    );
    let mut query = sqlx::query(&sql);
    for seq in seqs {
        query = query.bind(*seq);
    }
    let rows = query.fetch_all(&mut *conn).await?;
    rows.iter().map(change_from_row).collect()
}

fn change_from_row(row: &sqlx::any::AnyRow) -> Result<(i64, Option<Change>)> {
    let seq: i64 = row.try_get(0)?;
    let entity: String = row.try_get(1)?;
    let id: i64 = row.try_get(2)?;
    Ok((
        seq,
        Kind::parse(&entity).map(|kind| Change { seq, kind, id }),
    ))
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

/// The current rows for these ids; missing ids were deleted.
pub async fn load_docs(conn: &mut AnyConnection, kind: Kind, ids: &[i64]) -> Result<Vec<Doc>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "{} WHERE id IN ({})",
        select_docs(kind),
        placeholders(ids.len())
    );
    let mut query = sqlx::query(&sql);
    for id in ids {
        query = query.bind(*id);
    }
    let rows = query.fetch_all(&mut *conn).await?;
    rows.iter().map(|r| doc_from_row(kind, r)).collect()
}

/// One keyset page of rows with `id > after`, by id. Reindex streams the
/// tables with it; `OFFSET` would rescan everything skipped on every page.
pub async fn docs_page(db: &Db, kind: Kind, after: i64, limit: i64) -> Result<Vec<Doc>> {
    let sql = format!("{} WHERE id > ? ORDER BY id LIMIT ?", select_docs(kind));
    let rows = sqlx::query(&sql)
        .bind(after)
        .bind(limit)
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(|r| doc_from_row(kind, r)).collect()
}

pub async fn count_rows(db: &Db, kind: Kind) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {}", table(kind));
    Ok(sqlx::query_scalar(&sql).fetch_one(&db.pool).await?)
}

fn table(kind: Kind) -> &'static str {
    match kind {
        Kind::Question => "questions",
        Kind::Review => "reviews",
    }
}

fn select_docs(kind: Kind) -> &'static str {
    match kind {
        Kind::Question => {
            "SELECT id, author_id, NULL AS question_id, title, content, created_at, updated_at FROM questions"
        }
        Kind::Review => {
            "SELECT id, author_id, question_id, NULL AS title, content, created_at, updated_at FROM reviews"
        }
    }
}

fn doc_from_row(kind: Kind, row: &sqlx::any::AnyRow) -> Result<Doc> {
    Ok(Doc {
        kind,
        id: row.try_get("id")?,
        author_id: row.try_get("author_id")?,
        question_id: row.try_get("question_id")?,
        title: match kind {
            Kind::Question => Some(text(row, "title")?),
            Kind::Review => None,
        },
        content: text(row, "content")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// Records how far this replica has applied the outbox.
pub async fn heartbeat(db: &Db, replica: &str, applied: i64) -> Result<()> {
    let sql = match db.dialect {
        super::Dialect::MySql => {
            "INSERT INTO search_replicas (replica_id, applied_seq, updated_at) VALUES (?, ?, ?) \
             ON DUPLICATE KEY UPDATE applied_seq = VALUES(applied_seq), updated_at = VALUES(updated_at)"
        }
        super::Dialect::Sqlite => {
            "INSERT INTO search_replicas (replica_id, applied_seq, updated_at) VALUES (?, ?, ?) \
             ON CONFLICT (replica_id) DO UPDATE SET applied_seq = excluded.applied_seq, updated_at = excluded.updated_at"
        }
    };
    sqlx::query(sql)
        .bind(replica)
        .bind(applied)
        .bind(super::now_ms())
        .execute(&db.pool)
        .await?;
    Ok(())
}

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
/// applied, `batch` ids at a time, keeping `keep` rows of history. Returns
/// the rows deleted.
pub async fn prune(db: &Db, window_ms: i64, keep: i64, batch: i64) -> Result<u64> {
    let since = super::now_ms() - window_ms;
    let lowest: Option<i64> =
        sqlx::query_scalar("SELECT MIN(applied_seq) FROM search_replicas WHERE updated_at >= ?")
            .bind(since)
            .fetch_one(&db.pool)
            .await?;
    let Some(lowest) = lowest else { return Ok(0) };
    let target = lowest - keep;
    let mut from = pruned_through(db).await?;
    let mut deleted = 0;
    while from < target {
        let to = (from + batch).min(target);
        let mut tx = db.pool.begin().await?;
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
