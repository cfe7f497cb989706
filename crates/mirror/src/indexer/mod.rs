//! The outbox tailer.
//!
//! It reads outbox rows after the newest one it has seen, loads the current
//! state of each changed row and upserts or deletes it, then commits with
//! what it applied in the commit payload (a `Checkpoint`). Loading the
//! current state (rather than replaying the change) makes applying a change
//! idempotent, so replaying after a crash cannot leave a duplicate or an
//! old version.
//!
//! # Gaps
//!
//! Outbox ids are allocated when a transaction inserts, not when it
//! commits, so on MySQL a transaction can commit id 11 while id 10 is still
//! open (for a millisecond or for minutes) or will roll back. A missing id
//! below a seen one is a *gap*. Gaps are never dropped on a guess:
//!
//! - Every round re-reads every gap, so a late commit is applied within a
//!   round of becoming visible, however long its transaction stayed open.
//! - For `gap_grace` the recorded position (`Checkpoint::outbox_seq`, what
//!   `/readyz` reports) stays below the gap. Past that the gap is *late*:
//!   the position moves on, the gap is still re-read. Heartbeats report the
//!   low water below every gap instead, so pruning never takes a row that
//!   a gap may still fill.
//! - A gap is forgotten only when it is known never to appear. The
//!   transaction that allocated an id holds a lock on the outbox row it
//!   inserted until it ends, so a locking read of the gap that does not
//!   wait (`outbox::ranges_settled`) succeeds only once no transaction has
//!   an uncommitted row there; after that, an id the next read still
//!   misses was rolled back. This asks for no privilege, unlike
//!   `information_schema.innodb_trx` (which MySQL also serves from a cache
//!   that can lag).
//!
//! Gaps are part of the checkpoint, so restarts and rebuilds keep them.
//!
//! # Rebuilds
//!
//! A rebuilt generation starts from the live one's checkpoint (see
//! [`super::reindex`]) and is offered in `NEXT`. The indexer catches it up
//! on the outbox beside the live one, and makes it `CURRENT` and swaps it in
//! only once it has read to the head, so no change vanishes from search at
//! the swap, and a restart never serves a scan that has not caught up.

mod generations;
mod housekeeping;
mod position;
mod round;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use chaja_index::SearchIndex;
use chaja_store::Db;

use crate::Result;
use crate::{MirrorHandle, Running};
use position::MAX_GAP_RUNS;
use round::{close, Tail};

/// Patched rows rewritten whole per round when there are more than the
/// bound (after the bound was lowered, say): about half a second of
/// analysis on two cores.
const FOLD_BATCH: usize = 200;

#[derive(Debug, Clone)]
pub struct IndexerConfig {
    pub batch: i64,
    pub poll: Duration,
    /// How long a gap holds the recorded position back before it is late.
    pub gap_grace: Duration,
    pub writer_memory: usize,
    /// Which 4-grams a rebuild the indexer starts keeps positions for.
    pub positions: chaja_index::PositionsShare,
    /// This replica's name in `search_replicas`.
    pub replica_id: String,
    /// Replicas silent for longer than this do not hold back pruning.
    pub retention_window: Duration,
    /// Outbox rows kept below the lowest replica's position.
    pub keep_rows: i64,
    /// How often this replica reports its position and prunes.
    pub housekeeping: Duration,
    /// Scan for rows indexed twice at housekeeping and reload them. Off only
    /// to prove, in tests, that nothing needs healing.
    pub heal_duplicates: bool,
    /// Rows whose attributes may stay patched (see `chaja_index` patches):
    /// beyond, the indexer rewrites patched rows whole, a batch per round
    /// with nothing else to do.
    pub max_patches: usize,
}

impl Default for IndexerConfig {
    fn default() -> Self {
        IndexerConfig {
            batch: 2000,
            poll: Duration::from_millis(200),
            gap_grace: Duration::from_secs(60),
            writer_memory: 128 << 20,
            positions: Default::default(),
            replica_id: "default".to_owned(),
            retention_window: Duration::from_secs(24 * 3600),
            keep_rows: 100_000,
            housekeeping: Duration::from_secs(10),
            heal_duplicates: true,
            max_patches: 100_000,
        }
    }
}

pub struct Indexer {
    db: Db,
    /// Where the outbox and rows are tailed from: `db` itself, or a read
    /// replica of it (see [`Indexer::reading_from`]).
    read: Db,
    /// Whether `read` is a replica, so that a gap is never forgotten on
    /// its word alone.
    replica: bool,
    index: SearchIndex,
    handle: MirrorHandle,
    config: IndexerConfig,
}

impl Indexer {
    pub fn new(db: Db, index: SearchIndex, handle: MirrorHandle, config: IndexerConfig) -> Indexer {
        Indexer {
            read: db.clone(),
            replica: false,
            db,
            index,
            handle,
            config,
        }
    }

    /// Tails the outbox and loads rows from a read replica of the
    /// database. A replica lags: a change committed on the primary may not
    /// be there yet. So a gap the primary calls settled (no transaction
    /// holds it) is forgotten only when the primary does not have it
    /// either; otherwise it waits for the replica like any other gap.
    pub fn reading_from(mut self, replica: Db) -> Indexer {
        self.read = replica;
        self.replica = true;
        self
    }

    /// Runs until `shutdown`. Every round commits what it applied, so there
    /// is nothing left to commit on the way out.
    pub async fn run(self, shutdown: CancellationToken) -> Result<()> {
        let _running = Running(self.handle.progress.clone());
        let progress = self.handle.progress.clone();
        let mut live = self.open_tail(self.index.live()).await?;
        progress.committed_up_to(live.position.committed, live.position.high);
        tracing::info!(
            generation = live.generation.id,
            outbox_seq = live.position.committed,
            gaps = live.position.gaps.len(),
            "indexer resuming"
        );
        let mut candidate: Option<Tail> = None;
        let mut rebuilding: Option<tokio::task::JoinHandle<()>> = None;
        let mut backoff = self.config.poll;
        let mut last_housekeeping: Option<Instant> = None;
        loop {
            progress.tick();
            if shutdown.is_cancelled() {
                break;
            }
            // Due again only after the interval, failed or not (a failing
            // database is retried by the rounds, with backoff); but every
            // round until the first one succeeds: until then the replica
            // cannot say ready (see `Progress::is_checked`).
            let due = last_housekeeping.is_none_or(|t| t.elapsed() >= self.config.housekeeping);
            if due || !progress.is_checked() {
                last_housekeeping = Some(Instant::now());
                if let Err(e) = self.housekeeping(&live, &mut rebuilding).await {
                    tracing::debug!(error = ?e, "outbox housekeeping failed; retrying");
                }
                if self.config.heal_duplicates {
                    live.heal.extend(self.duplicates(&live).await?);
                }
            }
            // A reindex (this process or another) published a generation:
            // catch it up beside the live one.
            if let Some(id) = self.index.published()? {
                if candidate.as_ref().is_none_or(|c| c.generation.id != id) {
                    if let Some(old) = candidate.take() {
                        close(old).await;
                    }
                    match self.open_candidate(id).await {
                        Ok(tail) => {
                            tracing::info!(
                                generation = id,
                                outbox_seq = tail.position.committed,
                                "catching up a new index generation before swapping it in"
                            );
                            candidate = Some(tail);
                        }
                        Err(e) => {
                            tracing::warn!(generation = id, error = ?e, "cannot open the rebuilt generation; retrying")
                        }
                    }
                }
            }
            let mut busy = false;
            let mut failed = None;
            match self.round(&mut live).await {
                Ok(round) => {
                    busy |= round.new > 0 || round.changed;
                    // Patches beyond the bound are folded back into
                    // documents, a batch a round, busy or not.
                    busy |= live.fold_patches(self.config.max_patches, FOLD_BATCH);
                }
                Err(e) => failed = Some(e),
            }
            if let (Some(tail), None) = (candidate.as_mut(), &failed) {
                match self.round(tail).await {
                    // Read to the head of the outbox: nothing is missing.
                    Ok(round)
                        if (round.new as i64) < self.config.batch
                            && tail.position.gaps.len() < MAX_GAP_RUNS =>
                    {
                        let (root, id) = (self.index.root().to_path_buf(), tail.generation.id);
                        let current = tokio::task::spawn_blocking(move || {
                            chaja_index::make_current(&root, id)
                        })
                        .await?;
                        match current {
                            Ok(()) => {
                                let next = candidate.take().expect("candidate present");
                                let old = std::mem::replace(&mut live, next);
                                self.swap_in(&live, old).await;
                                busy = true;
                            }
                            // Tried again after the poll interval.
                            Err(e) => {
                                tracing::warn!(error = ?e, "cannot make the rebuilt generation current; retrying")
                            }
                        }
                    }
                    Ok(_) => busy = true,
                    Err(e) => failed = Some(e),
                }
            }
            match failed {
                None => {
                    progress.set_failing(false);
                    backoff = self.config.poll;
                    if busy {
                        continue;
                    }
                    tokio::select! {
                        _ = self.handle.wake.notified() => {}
                        _ = tokio::time::sleep(self.config.poll) => {}
                        _ = shutdown.cancelled() => {}
                    }
                }
                Some(e) => {
                    if !progress.is_failing() {
                        tracing::warn!(error = ?e, "indexer cannot read the outbox; retrying with backoff");
                    }
                    progress.set_failing(true);
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = shutdown.cancelled() => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
        tracing::info!(outbox_seq = live.position.committed, "indexer stopped");
        if let Some(tail) = candidate {
            close(tail).await;
        }
        close(live).await;
        Ok(())
    }
}
