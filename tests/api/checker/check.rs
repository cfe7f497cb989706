//! The checks: rows sampled during the run, and after it every row in the
//! tables (and every row gone) against the search API.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use sqlx::{Connection, Row};
use tokio_util::sync::CancellationToken;

use super::env::{Env, Status};
use super::http::Http;
use super::model::{find_version_token, Key, Model, RowKind};
use super::{Violations, GAP_GRACE_SECS, LAG_BOUND};

/// Searches sent at once by the final check.
const PARALLEL_SEARCHES: usize = 8;

/// Compares the search API with what is known to be committed.
pub(super) struct Check {
    pub(super) http: Http,
    pub(super) run: String,
    pub(super) violations: Violations,
}

impl Check {
    /// What the index must say about one row: `Ok` or the divergence.
    /// `likes`, when given, is the `like_count` its hit must show.
    async fn row(
        &self,
        kind: RowKind,
        id: i64,
        key: Key,
        version_token: Option<&str>,
        likes: Option<i64>,
    ) -> Result<(), String> {
        let token = key.token();
        let found = self.http.search(&token).await?;
        let Some(version_token) = version_token else {
            return if found.total == 0 && found.hits.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} {id} ({token}) is deleted but its token finds {found}",
                    kind.api()
                ))
            };
        };
        if !found.is_exactly(kind, id) {
            return Err(format!(
                "{} {id} ({token}) must be found exactly once, its token finds {found}",
                kind.api()
            ));
        }
        let current = self.http.search(version_token).await?;
        if !current.is_exactly(kind, id) {
            return Err(format!(
                "{} {id} ({token}) is not in its current version: {version_token} finds {current}",
                kind.api()
            ));
        }
        if likes.is_some() && found.likes != [likes] {
            return Err(format!(
                "{} {id} ({token}) shows like_count {:?}, the table has {likes:?}",
                kind.api(),
                found.likes
            ));
        }
        Ok(())
    }

    /// During the run, every `every`, while no fault is active and the
    /// server has been up for longer than the lag bound: rows whose last
    /// change committed longer than the bound ago. Rows not yet checked in
    /// their current state come first (up to 40 a round, so each is checked
    /// soon after it is due), then a few random ones again (a rebuild or a
    /// restart could lose what was there). Each divergence is reported once.
    pub(super) async fn sample_loop(
        self,
        model: Arc<Mutex<Model>>,
        status: Arc<Status>,
        seed: u64,
        every: Duration,
        stop: CancellationToken,
    ) -> u64 {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x00c4_ec4e);
        let mut sampled = 0;
        // Row → its `changes` when last checked (or reported).
        let mut checked: HashMap<Key, u64> = HashMap::new();
        let mut reported: HashMap<Key, u64> = HashMap::new();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stop.cancelled() => return sampled,
            }
            let Some(epoch) = status.quiet(LAG_BOUND) else {
                continue;
            };
            let mut settled = model.lock().unwrap().settled(LAG_BOUND);
            settled.sort_by_key(|(key, _)| *key);
            settled.shuffle(&mut rng);
            let (fresh, seen): (Vec<_>, Vec<_>) = settled
                .into_iter()
                .partition(|(key, row)| checked.get(key) != Some(&row.changes));
            let round = fresh.into_iter().take(40).chain(seen.into_iter().take(4));
            for (key, before) in round {
                let id = before.id.expect("settled rows have ids");
                let version = before.live.then(|| key.version_token(before.version));
                let result = self.row(key.kind, id, key, version.as_deref(), None).await;
                // Discard what a fault or a commit made meaningless.
                if !status.still(epoch) {
                    break;
                }
                let after = model.lock().unwrap().rows.get(&key).cloned();
                if after.is_none_or(|a| a.busy || a.changes != before.changes) {
                    continue;
                }
                sampled += 1;
                checked.insert(key, before.changes);
                if let Err(e) = result {
                    if reported.insert(key, before.changes) != Some(before.changes) {
                        let context = model.lock().unwrap().describe(key);
                        self.violations.record(format!(
                            "during the run, {:.1} s after its last commit: {e}; {context}",
                            before.committed_at.elapsed().as_secs_f64()
                        ));
                    }
                }
            }
        }
    }

    /// After the run, with everything applied: every row in the tables
    /// found once and current, every row gone not found, and the run-wide
    /// token's total equal to the row count. Returns (rows, gone) checked.
    pub(super) async fn everything(&self, env: &Env, model: &Model) -> (usize, usize) {
        let mut conn = match env.connect().await {
            Ok(conn) => conn,
            Err(e) => {
                self.violations
                    .record(format!("final check: cannot connect to MariaDB: {e}"));
                return (0, 0);
            }
        };
        // A question's like count is checked too: likes are applied as
        // patches of its attributes, not as new documents.
        let mut rows: Vec<(RowKind, i64, String, Option<i64>)> = Vec::new();
        for (kind, sql) in [
            (
                RowKind::Question,
                "SELECT id, content, CAST(like_count AS SIGNED) FROM questions ORDER BY id",
            ),
            (
                RowKind::Review,
                "SELECT id, content, NULL FROM reviews ORDER BY id",
            ),
        ] {
            let read = sqlx::query(sql).fetch_all(&mut conn).await.unwrap();
            for row in read {
                rows.push((
                    kind,
                    row.get::<i64, _>(0),
                    row.get::<String, _>(1),
                    row.get::<Option<i64>, _>(2),
                ));
            }
        }
        let _ = conn.close().await;

        // The tables are the truth; the model is checked against them only
        // to make sure the checker itself is sound.
        let mut present: BTreeMap<Key, (i64, String, Option<i64>)> = BTreeMap::new();
        for (kind, id, content, likes) in &rows {
            let key = Key::find(*kind, content);
            let version = find_version_token(content);
            match (key, version) {
                (Some(key), Some(version)) => {
                    present.insert(key, (*id, version.to_owned(), *likes));
                }
                _ => self.violations.record(format!(
                    "final check: {} {id} has no checker tokens: {content:?}",
                    kind.api()
                )),
            }
        }
        for (key, state) in &model.rows {
            if !state.known || !state.ever_committed {
                continue;
            }
            match (state.live, present.get(key)) {
                (true, None) => self.violations.record(format!(
                    "model: {} was committed and never deleted, but is not in the tables",
                    key.token()
                )),
                (true, Some((_, version, _))) if *version != key.version_token(state.version) => {
                    self.violations.record(format!(
                        "model: {} should be at {}, the table has {version}",
                        key.token(),
                        key.version_token(state.version)
                    ))
                }
                (false, Some((id, _, _))) => self.violations.record(format!(
                    "model: {} (id {id}) was deleted, but is in the tables",
                    key.token()
                )),
                _ => {}
            }
        }

        let live = present.iter().map(|(key, (id, version, likes))| {
            let (key, id, version, likes) = (*key, *id, version.clone(), *likes);
            async move {
                let result = self.row(key.kind, id, key, Some(&version), likes).await;
                (key, result)
            }
        });
        let gone_keys: Vec<Key> = model
            .rows
            .keys()
            .filter(|key| !present.contains_key(key))
            .copied()
            .collect();
        let gone = gone_keys.iter().map(|key| {
            let key = *key;
            // Its last id, if the INSERT ever answered; -1 otherwise.
            let id = model.rows[&key].id.unwrap_or(-1);
            async move { (key, self.row(key.kind, id, key, None, None).await) }
        });
        let mut results: Vec<(Key, Result<(), String>)> = futures::stream::iter(live)
            .buffer_unordered(PARALLEL_SEARCHES)
            .chain(futures::stream::iter(gone).buffer_unordered(PARALLEL_SEARCHES))
            .collect()
            .await;
        results.sort_by_key(|(key, _)| *key);
        for (key, result) in results {
            if let Err(e) = result {
                let context = model.describe(key);
                self.violations
                    .record(format!("after the run: {e}; {context}"));
            }
        }

        let token = format!("chk{}", self.run);
        match self.http.search(&token).await {
            Ok(found) if found.total == rows.len() as u64 => {}
            Ok(found) => self.violations.record(format!(
                "after the run: {token} (in every row) finds total {}, the tables hold {} rows",
                found.total,
                rows.len()
            )),
            Err(e) => self.violations.record(format!("after the run: {e}")),
        }
        (present.len(), gone_keys.len())
    }
}

/// Waits until the indexer has applied every outbox row, then the gap grace
/// and a little more, and checks again.
pub(super) async fn quiesce(env: &Env, deadline: Duration) -> Result<(), String> {
    let deadline = Instant::now() + deadline;
    let mut last = (None, 0);
    loop {
        let max = match env.connect().await {
            Ok(mut conn) => {
                let max =
                    sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(seq) FROM search_outbox")
                        .fetch_one(&mut conn)
                        .await
                        .ok()
                        .flatten()
                        .unwrap_or(0);
                let _ = conn.close().await;
                Some(max)
            }
            Err(_) => None,
        };
        let applied = env
            .http
            .readyz()
            .await
            .and_then(|r| r["indexer"]["applied_seq"].as_i64());
        if let (Some(max), Some(applied)) = (max, applied) {
            last = (Some(applied), max);
            if applied >= max {
                tokio::time::sleep(Duration::from_secs(GAP_GRACE_SECS + 3)).await;
                let again = env
                    .http
                    .readyz()
                    .await
                    .and_then(|r| r["indexer"]["applied_seq"].as_i64());
                if again.is_some_and(|a| a >= max) {
                    return Ok(());
                }
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the indexer did not apply the whole outbox in time: applied {:?}, outbox max {}",
                last.0, last.1
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
