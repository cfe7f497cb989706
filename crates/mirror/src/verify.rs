//! `chaja verify`: is the index equal to the tables?
//!
//! Both sides are streamed: the index's `(key, digest)` fast fields into a
//! map, then each source's visible rows by keyset, each row taking its
//! entry out. What is left in the map is extra; a row without an entry is
//! missing; a different digest ([`Doc::digest`] of the row's text, time and
//! attributes) is stale. Content is compared, not an `updated_at`: plain
//! SQL updates by other programs need not touch one. `--repair` writes
//! outbox rows for every drifted row, and the indexer fixes them like any
//! other change. A row that cannot be read (see `quarantine`) is reported
//! as unreadable; `repair` cannot mend it, only fixing the row can.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::Result;
use chaja_core::model::Doc;
use chaja_core::sources::Sources;
use chaja_index::Generation;
use chaja_store::rows::Loaded;
use chaja_store::Db;

use crate::quarantine::QuarantinedRow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Problem {
    /// In the table, not in the index.
    Missing,
    /// In the index, not in the table (or hidden by the source's filter).
    Extra,
    /// In both, with different content.
    Stale,
    /// In the index more than once.
    Duplicate,
    /// In the table, but it cannot be read (see `quarantine`): kept out of
    /// the index until it is fixed. `repair` cannot mend it.
    Unreadable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Drift {
    /// The source's name.
    #[serde(rename = "type")]
    pub source: String,
    /// The row's key, as the outbox writes it.
    pub id: String,
    pub problem: Problem,
    /// Why, for an unreadable row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Report {
    /// Visible rows in the tables, by source.
    pub rows_in_db: BTreeMap<String, u64>,
    pub docs_in_index: u64,
    pub missing: u64,
    pub extra: u64,
    pub stale: u64,
    pub duplicate: u64,
    pub unreadable: u64,
    /// Every drifted row (the first 1,000 in JSON answers).
    pub drift: Vec<Drift>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.missing == 0
            && self.extra == 0
            && self.stale == 0
            && self.duplicate == 0
            && self.unreadable == 0
    }

    fn add(&mut self, sources: &Sources, key_term: &str, problem: Problem) {
        match problem {
            Problem::Missing => self.missing += 1,
            Problem::Extra => self.extra += 1,
            Problem::Stale => self.stale += 1,
            Problem::Duplicate => self.duplicate += 1,
            Problem::Unreadable => self.unreadable += 1,
        }
        let (source, id) = match chaja_index::parse_key_term(key_term) {
            Some((source, key)) if source.index() < sources.len() => {
                (sources.get(source).name.clone(), key.to_owned())
            }
            _ => (String::new(), key_term.to_owned()),
        };
        self.drift.push(Drift {
            source,
            id,
            problem,
            reason: None,
        });
    }

    /// The unreadable rows found, as the quarantine lists them.
    pub fn unreadable_rows(&self) -> Vec<QuarantinedRow> {
        self.drift
            .iter()
            .filter(|d| d.problem == Problem::Unreadable)
            .map(|d| QuarantinedRow {
                source: d.source.clone(),
                key: d.id.clone(),
                reason: d.reason.clone().unwrap_or_default(),
                at_ms: chaja_core::clock::now_ms(),
            })
            .collect()
    }
}

const PAGE: i64 = 5_000;

/// `key → digest` of every live document, and the keys found more than
/// once. Blocking.
fn index_entries(generation: &Generation) -> Result<(HashMap<String, u64>, Vec<String>)> {
    Ok(generation.digests()?)
}

pub async fn verify(
    db: &Db,
    sources: &Sources,
    generation: std::sync::Arc<Generation>,
) -> Result<Report> {
    let (mut entries, duplicates) =
        tokio::task::spawn_blocking(move || index_entries(&generation)).await??;
    let mut report = Report {
        docs_in_index: (entries.len() + duplicates.len()) as u64,
        ..Report::default()
    };
    for key in duplicates {
        report.add(sources, &key, Problem::Duplicate);
    }
    for (id, source) in sources.ids() {
        let mut after = None;
        let mut rows = 0u64;
        loop {
            let page = chaja_store::rows::docs_page(db, sources, id, after.as_ref(), PAGE).await?;
            rows += page.rows.len() as u64;
            let last_page = page.next.is_none();
            after = page.next;
            let mut docs = Vec::with_capacity(page.rows.len());
            for row in page.rows {
                match row {
                    Loaded::Doc { doc, .. } => docs.push(doc),
                    Loaded::Unreadable(row) => {
                        report.unreadable += 1;
                        report.drift.push(Drift {
                            source: source.name.clone(),
                            id: row.key,
                            problem: Problem::Unreadable,
                            reason: Some(row.reason),
                        });
                    }
                }
            }
            let page = docs;
            // Digests hash every row's text: off the async workers.
            let digests = tokio::task::spawn_blocking(move || {
                page.iter()
                    .map(|doc: &Doc| {
                        (
                            chaja_index::key_term(doc.source, &doc.key.text()),
                            doc.digest(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
            for (key, digest) in digests {
                match entries.remove(&key) {
                    None => report.add(sources, &key, Problem::Missing),
                    Some(indexed) if indexed != digest => report.add(sources, &key, Problem::Stale),
                    Some(_) => {}
                }
            }
            if last_page {
                break;
            }
        }
        report.rows_in_db.insert(source.name.clone(), rows);
    }
    let mut extra: Vec<String> = entries.into_keys().collect();
    extra.sort_unstable();
    for key in extra {
        report.add(sources, &key, Problem::Extra);
    }
    metrics::gauge!("verify_drift", "problem" => "missing").set(report.missing as f64);
    metrics::gauge!("verify_drift", "problem" => "extra").set(report.extra as f64);
    metrics::gauge!("verify_drift", "problem" => "stale").set(report.stale as f64);
    metrics::gauge!("verify_drift", "problem" => "duplicate").set(report.duplicate as f64);
    metrics::gauge!("verify_drift", "problem" => "unreadable").set(report.unreadable as f64);
    Ok(report)
}

/// Queues every drifted row in the outbox; the indexer loads its current
/// state (or its absence) as for any change.
pub async fn repair(db: &Db, drift: &[Drift]) -> Result<u64> {
    let mut queued = 0;
    // An unreadable row has no key to queue: fixed, it shows as missing.
    let drift: Vec<&Drift> = drift
        .iter()
        .filter(|d| d.problem != Problem::Unreadable)
        .collect();
    for chunk in drift.chunks(500) {
        let mut sql =
            String::from("INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ");
        sql.push_str(&vec!["(?, ?, 'repair')"; chunk.len()].join(", "));
        let mut query = sqlx::query(&sql);
        for d in chunk {
            query = query.bind(d.source.as_str()).bind(d.id.as_str());
        }
        queued += query.execute(&db.pool).await?.rows_affected();
    }
    Ok(queued)
}
