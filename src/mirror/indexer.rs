//! The outbox tailer.
//!
//! It reads outbox rows after the newest one it has seen, loads the current
//! state of each changed row and upserts or deletes it, then commits with the
//! applied position in the commit payload. Loading the current state (rather
//! than replaying the change) makes applying a change idempotent, so replaying
//! from the payload after a crash cannot leave a duplicate or an old version.
//!
//! Outbox ids are allocated before commit, so on MySQL a transaction can
//! commit id 11 while id 10 is still open (or will roll back). A missing id is
//! a *gap*: later rows are applied at once, but the committed position stops
//! below the gap until the gap's row appears or `gap_grace` passes (a
//! rollback). After a restart, rows above the position are applied again,
//! which is harmless for the reason above.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::MirrorHandle;
use crate::db::outbox;
use crate::db::Db;
use crate::error::Result;
use crate::index::{DocWriter, Generation, SearchIndex};
use crate::model::{Doc, Kind};

#[derive(Debug, Clone)]
pub struct IndexerConfig {
    pub batch: i64,
    pub poll: Duration,
    pub gap_grace: Duration,
    pub writer_memory: usize,
    /// This replica's name in `search_replicas`.
    pub replica_id: String,
    /// Replicas silent for longer than this do not hold back pruning.
    pub retention_window: Duration,
    /// Outbox rows kept below the lowest replica's position.
    pub keep_rows: i64,
    /// How often this replica reports its position and prunes.
    pub housekeeping: Duration,
}

impl Default for IndexerConfig {
    fn default() -> Self {
        IndexerConfig {
            batch: 2000,
            poll: Duration::from_millis(200),
            gap_grace: Duration::from_secs(60),
            writer_memory: 128 << 20,
            replica_id: "default".to_owned(),
            retention_window: Duration::from_secs(24 * 3600),
            keep_rows: 100_000,
            housekeeping: Duration::from_secs(10),
        }
    }
}

/// Position bookkeeping, kept apart from I/O so it can be tested alone.
#[derive(Debug)]
struct Position {
    /// Everything at or below is applied (or was a gap that expired).
    committed: i64,
    /// The newest outbox id applied.
    high: i64,
    /// Missing ids between `committed` and `high`, with when they were noticed.
    gaps: BTreeMap<i64, Instant>,
    /// Rows to reload in the next round whatever the outbox says.
    heal: Vec<(Kind, i64)>,
}

/// Gaps beyond this many are treated as expired: a bound on memory and on
/// the size of the `IN` list that re-checks them.
const MAX_GAPS: usize = 1000;

impl Position {
    fn new(committed: i64) -> Position {
        Position {
            committed,
            high: committed,
            gaps: BTreeMap::new(),
            heal: Vec::new(),
        }
    }

    /// Records applied ids (sorted or not); returns nothing, updates gaps.
    fn applied(&mut self, seqs: &BTreeSet<i64>, now: Instant) {
        for &seq in seqs {
            if seq > self.high {
                for missing in self.high + 1..seq {
                    if self.gaps.len() < MAX_GAPS {
                        self.gaps.insert(missing, now);
                    }
                }
                self.high = seq;
            } else {
                self.gaps.remove(&seq);
            }
        }
    }

    /// Drops gaps older than `grace`; returns them for the log.
    fn expire(&mut self, grace: Duration, now: Instant) -> Vec<i64> {
        let expired: Vec<i64> = self
            .gaps
            .iter()
            .filter(|(_, seen)| now.duration_since(**seen) >= grace)
            .map(|(seq, _)| *seq)
            .collect();
        for seq in &expired {
            self.gaps.remove(seq);
        }
        expired
    }

    /// The position it is safe to record: just below the oldest open gap.
    fn safe(&self) -> i64 {
        match self.gaps.keys().next() {
            Some(first) => first - 1,
            None => self.high,
        }
    }
}

/// Rows to upsert (`Some`) or delete (`None`).
type Work = Vec<(Kind, i64, Option<Doc>)>;

pub struct Indexer {
    db: Db,
    index: SearchIndex,
    handle: MirrorHandle,
    config: IndexerConfig,
}

impl Indexer {
    pub fn new(db: Db, index: SearchIndex, handle: MirrorHandle, config: IndexerConfig) -> Indexer {
        Indexer {
            db,
            index,
            handle,
            config,
        }
    }

    /// Runs until `shutdown`, then commits what it has and returns.
    pub async fn run(self, shutdown: CancellationToken) -> Result<()> {
        let mut generation = self.index.live();
        let mut writer = Some(generation.writer(self.config.writer_memory)?);
        let mut position = Position::new(generation.applied_seq()?);
        self.handle.progress.committed(position.committed);
        tracing::info!(
            generation = generation.id,
            outbox_seq = position.committed,
            "indexer resuming"
        );
        let mut backoff = self.config.poll;
        let mut last_housekeeping: Option<Instant> = None;
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            if last_housekeeping.is_none_or(|t| t.elapsed() >= self.config.housekeeping) {
                match self.housekeeping(position.committed).await {
                    Ok(()) => last_housekeeping = Some(Instant::now()),
                    Err(e) => tracing::debug!(error = ?e, "outbox housekeeping failed; retrying"),
                }
                // Defensive: a row indexed twice is reloaded, which replaces
                // every copy. Seen once after a SIGKILL during a write burst
                // (cause not found); the scan costs one pass over a column.
                // Reloaded first: background merges publish new segments
                // without a commit of ours.
                let live = generation.clone();
                let scan = move || {
                    live.reader.reload()?;
                    live.duplicate_uids()
                };
                match tokio::task::spawn_blocking(scan).await? {
                    Ok(uids) if !uids.is_empty() => {
                        tracing::warn!(
                            count = uids.len(),
                            "rows indexed more than once; reloading them"
                        );
                        position.heal.extend(uids.into_iter().map(Kind::from_uid));
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = ?e, "duplicate scan failed"),
                }
            }
            // A reindex (this process or another) published a new generation.
            if let Some(next) = self.index.open_published()? {
                drop(writer.take());
                generation = Arc::new(next);
                writer = Some(generation.writer(self.config.writer_memory)?);
                position = Position::new(generation.applied_seq()?);
                self.index.swap(generation.clone());
                self.handle.progress.committed(position.committed);
                tracing::info!(
                    generation = generation.id,
                    outbox_seq = position.committed,
                    "switched to new index generation"
                );
                if let Err(e) = self.index.remove_old_generations() {
                    tracing::warn!(error = ?e, "could not remove old index generations");
                }
            }
            let w = writer.take().expect("writer present between rounds");
            let (w, round) = self.round(w, &generation, &mut position).await;
            writer = Some(w);
            match round {
                Ok(applied) => {
                    self.handle.progress.set_failing(false);
                    backoff = self.config.poll;
                    if applied {
                        continue;
                    }
                    tokio::select! {
                        _ = self.handle.wake.notified() => {}
                        _ = tokio::time::sleep(self.config.poll) => {}
                        _ = shutdown.cancelled() => {}
                    }
                }
                Err(e) => {
                    if !self.handle.progress.is_failing() {
                        tracing::warn!(error = ?e, "indexer cannot read the outbox; retrying with backoff");
                    }
                    self.handle.progress.set_failing(true);
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = shutdown.cancelled() => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
        tracing::info!(outbox_seq = position.committed, "indexer stopped");
        Ok(())
    }

    /// Reports this replica's position, prunes what every replica has
    /// applied, and rebuilds when this replica is behind what was pruned.
    async fn housekeeping(&self, committed: i64) -> Result<()> {
        outbox::heartbeat(&self.db, &self.config.replica_id, committed).await?;
        let pruned = outbox::pruned_through(&self.db).await?;
        if committed < pruned {
            tracing::warn!(
                replica = %self.config.replica_id,
                applied = committed,
                pruned_through = pruned,
                "replica fell behind the outbox retention window; rebuilding the index by reindex"
            );
            crate::mirror::reindex::reindex(
                &self.db,
                self.index.root(),
                self.config.writer_memory,
                false,
            )
            .await?;
            // The next round adopts the published generation.
            return Ok(());
        }
        let window = self.config.retention_window.as_millis() as i64;
        let deleted = outbox::prune(&self.db, window, self.config.keep_rows, 10_000).await?;
        if deleted > 0 {
            tracing::info!(deleted, "pruned applied outbox rows");
        }
        Ok(())
    }

    /// The next changes and the current state of their rows, read in one
    /// transaction: every row state is then at least as new as the outbox
    /// rows that point at it. Separate statements on pooled connections could
    /// each see a different snapshot, and an older row read after a newer
    /// outbox row would be recorded as applied.
    async fn read_batch(&self, position: &Position) -> Result<(BTreeSet<i64>, Work)> {
        let mut tx = self.db.pool.begin().await?;
        let mut changes = outbox::changes_after(&mut tx, position.high, self.config.batch).await?;
        if !position.gaps.is_empty() {
            let gaps: Vec<i64> = position.gaps.keys().copied().collect();
            changes.extend(outbox::changes_in(&mut tx, &gaps).await?);
        }
        let seqs: BTreeSet<i64> = changes.iter().map(|(seq, _)| *seq).collect();
        let mut ids: BTreeMap<Kind, BTreeSet<i64>> = BTreeMap::new();
        for change in changes.iter().filter_map(|(_, c)| c.as_ref()) {
            ids.entry(change.kind).or_default().insert(change.id);
        }
        for (kind, id) in &position.heal {
            ids.entry(*kind).or_default().insert(*id);
        }
        let mut work: Work = Vec::new();
        for (kind, ids) in ids {
            let ids: Vec<i64> = ids.into_iter().collect();
            let docs = outbox::load_docs(&mut tx, kind, &ids).await?;
            let mut docs: BTreeMap<i64, Doc> = docs.into_iter().map(|d| (d.id, d)).collect();
            for id in ids {
                work.push((kind, id, docs.remove(&id)));
            }
        }
        tx.commit().await?;
        Ok((seqs, work))
    }

    /// One batch: read, load, apply, commit. Returns whether anything new
    /// was applied. The writer goes to a blocking thread and comes back.
    async fn round(
        &self,
        writer: DocWriter,
        generation: &Arc<Generation>,
        position: &mut Position,
    ) -> (DocWriter, Result<bool>) {
        let (seqs, work) = match self.read_batch(position).await {
            Ok(batch) => batch,
            Err(e) => return (writer, Err(e)),
        };
        let now = Instant::now();
        let expired = position.expire(self.config.gap_grace, now);
        if !expired.is_empty() {
            tracing::warn!(seqs = ?expired, "outbox ids never appeared; treating them as rolled back");
        }
        if work.is_empty() && position.safe() == position.committed {
            return (writer, Ok(false));
        }
        // With no changes, only expired gaps move the recorded position.
        self.commit(writer, generation, position, work, seqs, now)
            .await
    }

    async fn commit(
        &self,
        mut writer: DocWriter,
        generation: &Arc<Generation>,
        position: &mut Position,
        work: Work,
        seqs: BTreeSet<i64>,
        now: Instant,
    ) -> (DocWriter, Result<bool>) {
        let mut next = Position {
            committed: position.committed,
            high: position.high,
            gaps: position.gaps.clone(),
            heal: Vec::new(),
        };
        next.applied(&seqs, now);
        let safe = next.safe();
        let generation = generation.clone();
        let applied = !work.is_empty();
        let span = tracing::debug_span!("index_commit", changes = work.len(), outbox_seq = safe);
        let joined = tokio::task::spawn_blocking(move || {
            let _enter = span.enter();
            let result = apply(&mut writer, &generation, &work, safe);
            (writer, result)
        })
        .await;
        match joined {
            Ok((writer, Ok(()))) => {
                next.committed = safe;
                *position = next;
                self.handle.progress.committed(safe);
                (writer, Ok(applied || !seqs.is_empty()))
            }
            Ok((writer, Err(e))) => (writer, Err(e)),
            Err(join) => panic!("index writer thread panicked: {join}"),
        }
    }
}

/// Applies changes and commits them with `outbox_seq`; blocking.
fn apply(
    writer: &mut DocWriter,
    generation: &Generation,
    work: &[(Kind, i64, Option<Doc>)],
    outbox_seq: i64,
) -> Result<()> {
    let started = Instant::now();
    for (kind, id, doc) in work {
        match doc {
            Some(doc) => writer.upsert(doc)?,
            None => writer.delete(*kind, *id),
        }
    }
    writer.commit(outbox_seq)?;
    generation.reader.reload()?;
    metrics::histogram!("index_commit_seconds").record(started.elapsed().as_secs_f64());
    metrics::counter!("index_changes_applied_total").increment(work.len() as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &[i64]) -> BTreeSet<i64> {
        s.iter().copied().collect()
    }

    #[test]
    fn position_stops_below_a_gap_until_it_fills() {
        let now = Instant::now();
        let mut p = Position::new(10);
        p.applied(&set(&[11, 13, 14]), now);
        assert_eq!(p.high, 14);
        assert_eq!(p.safe(), 11);
        p.applied(&set(&[12]), now);
        assert_eq!(p.safe(), 14);
    }

    #[test]
    fn position_passes_a_gap_after_the_grace_period() {
        let start = Instant::now();
        let mut p = Position::new(0);
        p.applied(&set(&[2]), start);
        assert_eq!(p.safe(), 0);
        assert!(p.expire(Duration::from_secs(60), start).is_empty());
        let later = start + Duration::from_secs(61);
        assert_eq!(p.expire(Duration::from_secs(60), later), vec![1]);
        assert_eq!(p.safe(), 2);
    }
}
