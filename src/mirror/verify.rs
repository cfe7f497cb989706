//! `chaja verify`: is the index equal to the tables?
//!
//! Both sides are streamed: the index's `(uid, updated_at)` fast fields into
//! a map, then the tables by keyset, each row taking its entry out. What is
//! left in the map is extra; a row without an entry is missing; a different
//! `updated_at` is stale. `--repair` writes outbox rows for every drifted
//! entity, and the indexer fixes them like any other change.

use std::collections::HashMap;

use serde::Serialize;
use sqlx::Row;

use crate::db::Db;
use crate::error::Result;
use crate::index::Generation;
use crate::model::Kind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Problem {
    /// In the table, not in the index.
    Missing,
    /// In the index, not in the table.
    Extra,
    /// In both, with a different `updated_at`.
    Stale,
    /// In the index more than once.
    Duplicate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Drift {
    #[serde(rename = "type")]
    pub kind: Kind,
    pub id: i64,
    pub problem: Problem,
}

#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Report {
    pub questions_in_db: u64,
    pub reviews_in_db: u64,
    pub docs_in_index: u64,
    pub missing: u64,
    pub extra: u64,
    pub stale: u64,
    pub duplicate: u64,
    /// Every drifted entity (the first 1,000 in JSON answers).
    pub drift: Vec<Drift>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.missing == 0 && self.extra == 0 && self.stale == 0 && self.duplicate == 0
    }

    fn add(&mut self, kind: Kind, id: i64, problem: Problem) {
        match problem {
            Problem::Missing => self.missing += 1,
            Problem::Extra => self.extra += 1,
            Problem::Stale => self.stale += 1,
            Problem::Duplicate => self.duplicate += 1,
        }
        self.drift.push(Drift { kind, id, problem });
    }
}

const PAGE: i64 = 10_000;

/// `uid → updated_at` of every live document, and the uids found more
/// than once. Blocking.
fn index_entries(generation: &Generation) -> Result<(HashMap<u64, i64>, Vec<u64>)> {
    let searcher = generation.reader.searcher();
    let mut entries = HashMap::with_capacity(searcher.num_docs() as usize);
    let mut duplicates = Vec::new();
    for segment in searcher.segment_readers() {
        let uid = segment.fast_fields().u64("uid")?;
        let updated = segment.fast_fields().i64("updated_at")?;
        for doc in segment.doc_ids_alive() {
            if let Some(u) = uid.first(doc) {
                let updated_at = updated.first(doc).unwrap_or_default();
                if let Some(other) = entries.insert(u, updated_at) {
                    duplicates.push(u);
                    // Keep the newer copy for the stale check.
                    entries.insert(u, other.max(updated_at));
                }
            }
        }
    }
    Ok((entries, duplicates))
}

pub async fn verify(db: &Db, generation: std::sync::Arc<Generation>) -> Result<Report> {
    let (mut entries, duplicates) =
        tokio::task::spawn_blocking(move || index_entries(&generation)).await??;
    let mut report = Report {
        docs_in_index: (entries.len() + duplicates.len()) as u64,
        ..Report::default()
    };
    for uid in duplicates {
        let (kind, id) = Kind::from_uid(uid);
        report.add(kind, id, Problem::Duplicate);
    }
    for kind in [Kind::Question, Kind::Review] {
        let table = match kind {
            Kind::Question => "questions",
            Kind::Review => "reviews",
        };
        let sql = format!("SELECT id, updated_at FROM {table} WHERE id > ? ORDER BY id LIMIT ?");
        let mut after = 0i64;
        loop {
            let rows = sqlx::query(&sql)
                .bind(after)
                .bind(PAGE)
                .fetch_all(&db.pool)
                .await?;
            let Some(last) = rows.last() else { break };
            after = last.try_get(0)?;
            for row in &rows {
                let id: i64 = row.try_get(0)?;
                let updated_at: i64 = row.try_get(1)?;
                match kind {
                    Kind::Question => report.questions_in_db += 1,
                    Kind::Review => report.reviews_in_db += 1,
                }
                match entries.remove(&kind.uid(id)) {
                    None => report.add(kind, id, Problem::Missing),
                    Some(indexed) if indexed != updated_at => report.add(kind, id, Problem::Stale),
                    Some(_) => {}
                }
            }
        }
    }
    let mut extra: Vec<u64> = entries.into_keys().collect();
    extra.sort_unstable();
    for uid in extra {
        let (kind, id) = Kind::from_uid(uid);
        report.add(kind, id, Problem::Extra);
    }
    metrics::gauge!("verify_drift", "problem" => "missing").set(report.missing as f64);
    metrics::gauge!("verify_drift", "problem" => "extra").set(report.extra as f64);
    metrics::gauge!("verify_drift", "problem" => "stale").set(report.stale as f64);
    metrics::gauge!("verify_drift", "problem" => "duplicate").set(report.duplicate as f64);
    Ok(report)
}

/// Queues every drifted entity in the outbox; the indexer loads its current
/// state (or its absence) as for any change.
pub async fn repair(db: &Db, drift: &[Drift]) -> Result<u64> {
    let mut queued = 0;
    for chunk in drift.chunks(500) {
        let mut sql =
            String::from("INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ");
        sql.push_str(&vec!["(?, ?, 'repair')"; chunk.len()].join(", "));
        let mut query = sqlx::query(&sql);
        for d in chunk {
            query = query.bind(d.kind.as_str()).bind(d.id);
        }
        queued += query.execute(&db.pool).await?.rows_affected();
    }
    Ok(queued)
}
