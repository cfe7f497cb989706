//! The outbox tailer.
//!
//! It reads outbox rows after the newest one it has seen, loads the current
//! state of each changed row and upserts or deletes it, then commits with
//! what it applied in the commit payload (a [`Checkpoint`]). Loading the
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
//!   wait ([`outbox::ranges_settled`]) succeeds only once no transaction has
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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{MirrorHandle, Running};
use crate::{MirrorError, Result};
use chaja_core::model::Doc;
use chaja_core::sources::{SourceId, Sources};
use chaja_index::{Checkpoint, DocWriter, GapRange, Generation, SearchIndex};
use chaja_store::outbox::{self, OutboxRow};
use chaja_store::Db;

#[derive(Debug, Clone)]
pub struct IndexerConfig {
    pub batch: i64,
    pub poll: Duration,
    /// How long a gap holds the recorded position back before it is late.
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
    /// Scan for rows indexed twice at housekeeping and reload them. Off only
    /// to prove, in tests, that nothing needs healing.
    pub heal_duplicates: bool,
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
            heal_duplicates: true,
        }
    }
}

/// A run of missing outbox ids, `first..=last` (the map key is `first`).
#[derive(Debug, Clone)]
struct Gap {
    last: i64,
    noticed: Instant,
    /// When a locking read last found it still held.
    checked: Option<Instant>,
    /// Past the grace period: the recorded position has moved past it.
    late: bool,
    /// A locking read just before the current read found no transaction
    /// holding any of it: whatever of it this read does not find never
    /// will be.
    settled: bool,
}

/// A gap is checked for settling no sooner than this after it is noticed,
/// and then at most this often. An InnoDB insert allocates its
/// auto-increment id a moment before its row (and the lock on it) exists;
/// this leaves that moment far behind.
const SETTLE_EVERY: Duration = Duration::from_secs(1);

/// Gap runs kept at most. Past this the indexer stops reading new changes
/// (and says so) until gaps resolve: it never drops one to save memory.
const MAX_GAP_RUNS: usize = 100_000;

/// Position bookkeeping, kept apart from I/O so it can be tested alone.
#[derive(Debug, Clone)]
struct Position {
    /// Everything at or below is applied, except late gaps.
    committed: i64,
    /// The newest outbox id applied.
    high: i64,
    /// `created_at` of the outbox row at `high`, when known.
    high_created_at: Option<i64>,
    gaps: BTreeMap<i64, Gap>,
}

impl Position {
    fn new(checkpoint: &Checkpoint, now: Instant) -> Position {
        let mut gaps = BTreeMap::new();
        for range in &checkpoint.gaps {
            gaps.insert(
                range.first,
                Gap {
                    last: range.last,
                    noticed: now,
                    checked: None,
                    late: range.late,
                    settled: false,
                },
            );
        }
        Position {
            committed: checkpoint.outbox_seq,
            high: checkpoint.high.unwrap_or(checkpoint.outbox_seq),
            high_created_at: checkpoint.high_created_at,
            gaps,
        }
    }

    fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            outbox_seq: self.committed,
            high: Some(self.high),
            high_created_at: self.high_created_at,
            gaps: self
                .gaps
                .iter()
                .map(|(first, gap)| GapRange {
                    first: *first,
                    last: gap.last,
                    late: gap.late,
                })
                .collect(),
        }
    }

    /// Every outbox row this position could still need is above this: see
    /// `Checkpoint::low_water`. What replicas report for pruning.
    fn low_water(&self) -> i64 {
        match self.gaps.keys().next() {
            Some(first) => (first - 1).min(self.committed),
            None => self.committed,
        }
    }

    /// The gap runs to re-read.
    fn ranges(&self) -> Vec<(i64, i64)> {
        self.gaps.iter().map(|(f, g)| (*f, g.last)).collect()
    }

    /// The gaps due for a settling check at `now`.
    fn due(&self, now: Instant) -> Vec<(i64, i64)> {
        self.gaps
            .iter()
            .filter(|(_, gap)| {
                let since = gap.checked.unwrap_or(gap.noticed);
                now.duration_since(since) >= SETTLE_EVERY
            })
            .map(|(first, gap)| (*first, gap.last))
            .collect()
    }

    /// Records a settling check of the gap starting at `first`.
    fn checked(&mut self, first: i64, settled: bool, now: Instant) {
        if let Some(gap) = self.gaps.get_mut(&first) {
            gap.checked = Some(now);
            gap.settled = settled;
        }
    }

    /// Records the ids a read found, in any order: fills gaps, notices new
    /// ones above `high`.
    fn applied(&mut self, rows: &[OutboxRow], now: Instant) {
        let mut seqs: Vec<(i64, i64)> = rows.iter().map(|r| (r.seq, r.created_at)).collect();
        seqs.sort_unstable();
        seqs.dedup();
        for (seq, created_at) in seqs {
            if seq > self.high {
                if seq > self.high + 1 {
                    self.gaps.insert(
                        self.high + 1,
                        Gap {
                            last: seq - 1,
                            noticed: now,
                            checked: None,
                            late: false,
                            settled: false,
                        },
                    );
                }
                self.high = seq;
                self.high_created_at = Some(created_at);
            } else {
                self.fill(seq);
            }
        }
    }

    /// Takes `seq` out of the gap that holds it, if any.
    fn fill(&mut self, seq: i64) {
        let Some((&first, gap)) = self.gaps.range(..=seq).next_back() else {
            return;
        };
        if gap.last < seq {
            return;
        }
        let gap = self.gaps.remove(&first).expect("gap just found");
        if first < seq {
            let mut before = gap.clone();
            before.last = seq - 1;
            self.gaps.insert(first, before);
        }
        if seq < gap.last {
            self.gaps.insert(seq + 1, gap);
        }
    }

    /// After a read: forgets settled gaps (what the read did not find of
    /// them never will be found), makes gaps past `grace` late, and moves
    /// the recorded position. Returns the forgotten runs, for the log.
    fn settle(&mut self, grace: Duration, now: Instant) -> Vec<(i64, i64)> {
        let mut forgotten = Vec::new();
        self.gaps.retain(|first, gap| {
            if gap.settled {
                forgotten.push((*first, gap.last));
                return false;
            }
            if now.duration_since(gap.noticed) >= grace {
                gap.late = true;
            }
            true
        });
        self.committed = self.safe();
        forgotten
    }

    /// The position it is safe to record: just below the oldest gap still
    /// within its grace period.
    fn safe(&self) -> i64 {
        let pending = self.gaps.iter().find(|(_, gap)| !gap.late);
        match pending {
            Some((first, _)) => (first - 1).max(self.committed),
            None => self.high.max(self.committed),
        }
    }
}

/// Loads the current state of `ids` on `conn` into `work`: the row, or
/// `None` (delete) for a row that is gone.
async fn load_into(
    work: &mut Work,
    conn: &mut sqlx::AnyConnection,
    sources: &Sources,
    keys: BTreeMap<SourceId, BTreeSet<String>>,
) -> Result<()> {
    for (source, keys) in keys {
        let keys: Vec<String> = keys.into_iter().collect();
        let docs = chaja_store::rows::load_docs(conn, sources, source, &keys).await?;
        let mut docs: BTreeMap<String, Doc> = docs.into_iter().map(|d| (d.key.text(), d)).collect();
        for key in keys {
            let doc = docs.remove(&key);
            work.push((source, key, doc));
        }
    }
    Ok(())
}

/// Outbox ids committed on the primary.
#[derive(Default)]
struct Committed(BTreeSet<i64>);

impl Committed {
    fn contains(&self, first: i64, last: i64) -> bool {
        self.0.range(first..=last).next().is_some()
    }
}

/// Rows to upsert (`Some`) or delete (`None`).
type Work = Vec<(SourceId, String, Option<Doc>)>;

/// One batch read from the database.
struct Batch {
    /// Every outbox row read: new ones and filled gaps.
    rows: Vec<OutboxRow>,
    /// How many were new (after `high`): a full batch means more is waiting.
    new: usize,
    work: Work,
}

/// A generation being kept in step with the outbox: the live one, or a
/// rebuilt one catching up before it is swapped in.
struct Tail {
    generation: Arc<Generation>,
    /// On loan to a blocking thread during a commit.
    writer: Option<DocWriter>,
    position: Position,
    /// Rows to reload in the next round whatever the outbox says.
    heal: Vec<(SourceId, String)>,
}

/// What a round did.
#[derive(Debug, Clone, Copy, Default)]
struct Round {
    /// Outbox rows read after `high`.
    new: usize,
    /// Documents changed.
    changed: bool,
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
        progress.committed(live.position.committed);
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
            if last_housekeeping.is_none_or(|t| t.elapsed() >= self.config.housekeeping) {
                // Due again only after the interval, failed or not: a failing
                // database is retried by the rounds, with backoff.
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
                Ok(round) => busy |= round.new > 0 || round.changed,
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

    async fn open_candidate(&self, id: u64) -> Result<Tail> {
        let index = self.index.clone();
        let generation = tokio::task::spawn_blocking(move || index.open_generation(id)).await??;
        self.open_tail(Arc::new(generation)).await
    }

    async fn open_tail(&self, generation: Arc<Generation>) -> Result<Tail> {
        let memory = self.config.writer_memory;
        let opened = generation.clone();
        let (writer, checkpoint) = tokio::task::spawn_blocking(move || -> Result<_> {
            Ok((opened.writer(memory)?, opened.checkpoint()?))
        })
        .await??;
        Ok(Tail {
            generation,
            writer: Some(writer),
            position: Position::new(&checkpoint, Instant::now()),
            heal: Vec::new(),
        })
    }

    /// Makes a caught-up generation the live one.
    async fn swap_in(&self, live: &Tail, old: Tail) {
        self.index.swap(live.generation.clone());
        let progress = &self.handle.progress;
        progress.committed(live.position.committed);
        progress.changed();
        progress.set_rewound(false);
        tracing::info!(
            generation = live.generation.id,
            outbox_seq = live.position.committed,
            "switched to new index generation"
        );
        close(old).await;
        // Report the new position before the rebuild's hold goes: the old
        // generation's row may say more than this one has applied.
        let marker = chaja_index::rebuild_marker(&live.generation.path);
        let reported =
            outbox::heartbeat(&self.db, &self.config.replica_id, live.position.low_water()).await;
        let released = match reported {
            Ok(()) => outbox::release(&self.db, &marker).await,
            Err(e) => Err(e),
        };
        if let Err(e) = released {
            tracing::debug!(error = ?e, "could not hand the rebuild's hold on pruning over; housekeeping does");
        }
        let index = self.index.clone();
        match tokio::task::spawn_blocking(move || index.remove_old_generations()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = ?e, "could not remove old index generations"),
            Err(e) => tracing::warn!(error = ?e, "removing old index generations panicked"),
        }
    }

    /// Rows indexed more than once, to reload: that replaces every copy.
    /// Seen once after a SIGKILL during a write burst (cause not found); the
    /// scan costs one pass over a column. Reloaded first: background merges
    /// publish new segments without a commit of ours.
    async fn duplicates(&self, live: &Tail) -> Result<Vec<(SourceId, String)>> {
        let generation = live.generation.clone();
        let scan = move || {
            generation.reader.reload()?;
            generation.duplicate_keys()
        };
        match tokio::task::spawn_blocking(scan).await? {
            Ok(keys) if !keys.is_empty() => {
                tracing::warn!(
                    count = keys.len(),
                    "rows indexed more than once; reloading them"
                );
                Ok(keys
                    .iter()
                    .filter_map(|k| chaja_index::parse_key_term(k))
                    .map(|(source, key)| (source, key.to_owned()))
                    .collect())
            }
            Ok(_) => Ok(Vec::new()),
            Err(e) => {
                tracing::warn!(error = ?e, "duplicate scan failed");
                Ok(Vec::new())
            }
        }
    }

    /// Reports this replica's position, prunes what every replica has
    /// applied, and rebuilds when this replica is behind what was pruned or
    /// the outbox was rewound under it.
    async fn housekeeping(
        &self,
        live: &Tail,
        rebuilding: &mut Option<tokio::task::JoinHandle<()>>,
    ) -> Result<()> {
        let position = &live.position;
        // Not the recorded position, which moves past late gaps: their rows
        // may commit yet, and must not be pruned first.
        outbox::heartbeat(&self.db, &self.config.replica_id, position.low_water()).await?;
        // The live generation's rebuild, if it was one, no longer needs a
        // hold: this replica's own row now covers it.
        outbox::release(
            &self.db,
            &chaja_index::rebuild_marker(&live.generation.path),
        )
        .await?;
        let pruned = outbox::pruned_through(&self.db).await?;
        let rewound = outbox::rewound(&self.db, position.high, position.high_created_at).await?;
        let reason = if rewound {
            Some("the outbox restarted below the applied position (a restored database?)")
        } else if position.low_water() < pruned {
            Some("replica fell behind the outbox retention window")
        } else {
            None
        };
        self.handle.progress.set_rewound(rewound);
        if let Some(reason) = reason {
            // One at a time, and none while a published one waits to be
            // caught up and swapped in.
            let idle = rebuilding.as_ref().is_none_or(|task| task.is_finished());
            if idle && self.index.published()?.is_none() {
                tracing::warn!(
                    replica = %self.config.replica_id,
                    applied = position.committed,
                    high = position.high,
                    pruned_through = pruned,
                    "{reason}; rebuilding the index by reindex"
                );
                let (db, root) = (self.db.clone(), self.index.root().to_path_buf());
                let sources = self.index.sources().clone();
                let memory = self.config.writer_memory;
                // Beside the loop: the live generation keeps following the
                // outbox, and the rebuild is caught up before the swap.
                *rebuilding = Some(tokio::spawn(async move {
                    match crate::reindex::reindex(&db, &sources, &root, memory, false).await {
                        Ok(_) => {}
                        Err(MirrorError::RebuildRunning) => {
                            tracing::info!("a reindex is already running; adopting its result")
                        }
                        Err(e) => {
                            tracing::error!(error = ?e, "self-rebuild failed; retried at the next housekeeping")
                        }
                    }
                }));
            }
            return Ok(());
        }
        let window = self.config.retention_window.as_millis() as i64;
        let deleted = outbox::prune(&self.db, window, self.config.keep_rows, 10_000).await?;
        if deleted > 0 {
            tracing::info!(deleted, "pruned applied outbox rows");
        }
        Ok(())
    }

    /// The next changes, the gaps re-read, and the current state of their
    /// rows, in one transaction: every row state is then at least as new as
    /// the outbox rows that point at it. Separate statements on pooled
    /// connections could each see a different snapshot, and an older row
    /// read after a newer outbox row would be recorded as applied.
    async fn read_batch(&self, position: &Position, heal: &[(SourceId, String)]) -> Result<Batch> {
        let mut tx = self.read.pool.begin().await?;
        let mut rows = if position.gaps.len() < MAX_GAP_RUNS {
            outbox::changes_after(&mut tx, position.high, self.config.batch).await?
        } else {
            tracing::warn!(
                gaps = position.gaps.len(),
                "too many open outbox gaps; reading no new changes until they resolve"
            );
            Vec::new()
        };
        let new = rows.len();
        if !position.gaps.is_empty() {
            rows.extend(outbox::changes_in_ranges(&mut tx, &position.ranges()).await?);
        }
        let sources = self.index.sources();
        let mut ids: BTreeMap<SourceId, BTreeSet<String>> = BTreeMap::new();
        let mut unknown = 0u64;
        for row in &rows {
            let source = row
                .change
                .as_ref()
                .and_then(|c| Some((sources.by_name(&c.entity_type)?, &c.key)));
            match source {
                Some((source, key)) => {
                    ids.entry(source).or_default().insert(key.clone());
                }
                None => unknown += 1,
            }
        }
        if unknown > 0 {
            // Skipped, not re-read forever: the position moves past them.
            tracing::warn!(
                count = unknown,
                "skipping outbox rows of a source not in the config, or without a key"
            );
            metrics::counter!("outbox_unknown_rows_total").increment(unknown);
        }
        // Rows indexed twice are reloaded as they are now. A replica may be
        // behind what the index already holds (a rebuild scans the
        // primary), and their changes are not read again: load them from
        // the primary, after this batch's rows.
        let mut healing: BTreeMap<SourceId, BTreeSet<String>> = BTreeMap::new();
        for (source, key) in heal {
            let set = if self.replica { &mut healing } else { &mut ids };
            set.entry(*source).or_default().insert(key.clone());
        }
        let mut work: Work = Vec::new();
        load_into(&mut work, &mut tx, sources, ids).await?;
        tx.commit().await?;
        if !healing.is_empty() {
            let mut primary = self.db.pool.begin().await?;
            load_into(&mut work, &mut primary, sources, healing).await?;
            primary.commit().await?;
        }
        Ok(Batch { rows, new, work })
    }

    /// The outbox ids in `ranges` that the primary has committed, when rows
    /// are read from a replica (which may not have them yet). Reading from
    /// the primary itself, none need waiting for: the read that follows
    /// sees what the settling check saw.
    async fn on_primary(&self, ranges: &[(i64, i64)]) -> Result<Committed> {
        if !self.replica {
            return Ok(Committed::default());
        }
        let mut conn = self.db.pool.acquire().await?;
        let rows = outbox::changes_in_ranges(&mut conn, ranges).await?;
        Ok(Committed(rows.iter().map(|r| r.seq).collect()))
    }

    /// One batch on one tail: check gaps that are due, read, apply, commit.
    async fn round(&self, tail: &mut Tail) -> Result<Round> {
        let mut next = tail.position.clone();
        let now = Instant::now();
        let due = next.due(now);
        // One locking read for all of them, and one per gap only when some
        // transaction still holds one.
        if !due.is_empty() && outbox::ranges_settled(&self.db, &due).await? {
            let replicated = self.on_primary(&due).await?;
            for (first, last) in &due {
                next.checked(*first, !replicated.contains(*first, *last), now);
            }
        } else {
            for (first, last) in due {
                let settled = outbox::ranges_settled(&self.db, &[(first, last)]).await?
                    && !self
                        .on_primary(&[(first, last)])
                        .await?
                        .contains(first, last);
                next.checked(first, settled, now);
            }
        }
        let batch = self.read_batch(&next, &tail.heal).await?;
        let now = Instant::now();
        next.applied(&batch.rows, now);
        let forgotten = next.settle(self.config.gap_grace, now);
        if !forgotten.is_empty() {
            tracing::info!(runs = ?forgotten, "outbox ids whose transactions ended without them: rolled back");
        }
        let round = Round {
            new: batch.new,
            changed: !batch.work.is_empty(),
        };
        let moved = next.committed != tail.position.committed || next.high != tail.position.high;
        if !round.changed && !moved {
            // Nothing to make durable: gap bookkeeping is re-derived after a
            // restart from the last checkpoint.
            tail.position = next;
            return Ok(round);
        }
        let checkpoint = next.checkpoint();
        let mut writer = tail.writer.take().expect("writer present between rounds");
        let generation = tail.generation.clone();
        let work = batch.work;
        let span = tracing::debug_span!(
            "index_commit",
            changes = work.len(),
            outbox_seq = checkpoint.outbox_seq
        );
        let joined = tokio::task::spawn_blocking(move || {
            let _enter = span.enter();
            let result = apply(&mut writer, &generation, &work, &checkpoint);
            (writer, result)
        })
        .await;
        let (writer, result) = match joined {
            Ok(done) => done,
            Err(join) => panic!("index writer thread panicked: {join}"),
        };
        tail.writer = Some(writer);
        result?;
        tail.position = next;
        tail.heal.clear();
        if Arc::ptr_eq(&tail.generation, &self.index.live()) {
            self.handle.progress.committed(tail.position.committed);
            if round.changed {
                self.handle.progress.changed();
            }
        }
        Ok(round)
    }
}

/// Drops a tail's writer on a blocking thread: it joins tantivy's threads.
async fn close(tail: Tail) {
    let _ = tokio::task::spawn_blocking(move || drop(tail)).await;
}

/// Applies changes and commits them with `checkpoint`; blocking.
fn apply(
    writer: &mut DocWriter,
    generation: &Generation,
    work: &[(SourceId, String, Option<Doc>)],
    checkpoint: &Checkpoint,
) -> Result<()> {
    let started = Instant::now();
    for (source, key, doc) in work {
        match doc {
            Some(doc) => writer.upsert(doc)?,
            None => writer.delete(*source, key),
        }
    }
    writer.commit_checkpoint(checkpoint)?;
    generation.reader.reload()?;
    metrics::histogram!("index_commit_seconds").record(started.elapsed().as_secs_f64());
    metrics::counter!("index_changes_applied_total").increment(work.len() as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(60);

    fn rows(seqs: &[i64]) -> Vec<OutboxRow> {
        seqs.iter()
            .map(|&seq| OutboxRow {
                seq,
                created_at: 1000 + seq,
                change: None,
            })
            .collect()
    }

    #[test]
    fn position_stops_below_a_gap_until_it_fills() {
        let now = Instant::now();
        let mut p = Position::new(&Checkpoint::at(10), now);
        p.applied(&rows(&[11, 13, 14]), now);
        p.settle(GRACE, now);
        assert_eq!((p.high, p.committed), (14, 11));
        p.applied(&rows(&[12]), now);
        p.settle(GRACE, now);
        assert_eq!(p.committed, 14);
        assert!(p.gaps.is_empty());
    }

    #[test]
    fn a_late_gap_lets_the_position_pass_but_is_still_read() {
        let start = Instant::now();
        let mut p = Position::new(&Checkpoint::at(0), start);
        p.applied(&rows(&[2]), start);
        p.settle(GRACE, start);
        assert_eq!(p.committed, 0);
        let later = start + GRACE + Duration::from_secs(1);
        assert!(p.settle(GRACE, later).is_empty());
        assert_eq!(p.committed, 2);
        // Still re-read, and applied when its transaction commits.
        assert_eq!(p.ranges(), [(1, 1)]);
        p.applied(&rows(&[1]), later);
        assert!(p.gaps.is_empty());
        assert_eq!(p.committed, 2);
    }

    #[test]
    fn a_gap_is_forgotten_only_after_a_check_finds_it_settled() {
        let now = Instant::now();
        let mut p = Position::new(&Checkpoint::at(0), now);
        p.applied(&rows(&[5]), now);
        p.settle(GRACE, now);
        // Not due at once: the inserting transaction may not hold its row
        // lock yet.
        assert!(p.due(now).is_empty());
        let now = now + SETTLE_EVERY;
        assert_eq!(p.due(now), [(1, 4)]);
        // Still held: kept, and not due again for a while.
        p.checked(1, false, now);
        p.applied(&rows(&[2]), now);
        p.settle(GRACE, now);
        assert_eq!(p.ranges(), [(1, 1), (3, 4)]);
        assert!(p.due(now).is_empty());
        // Settled: what this read did not find never will be.
        let now = now + SETTLE_EVERY;
        assert_eq!(p.due(now), [(1, 1), (3, 4)]);
        p.checked(1, true, now);
        p.checked(3, true, now);
        p.applied(&rows(&[4]), now);
        assert_eq!(p.settle(GRACE, now), [(1, 1), (3, 3)]);
        assert!(p.gaps.is_empty());
        assert_eq!(p.committed, 5);
    }

    #[test]
    fn gaps_survive_a_checkpoint_round_trip() {
        let now = Instant::now();
        let mut p = Position::new(&Checkpoint::at(0), now);
        p.applied(&rows(&[3, 7]), now);
        p.settle(GRACE, now + GRACE);
        let checkpoint = p.checkpoint();
        let text = serde_json::to_string(&checkpoint).unwrap();
        let back: Checkpoint = serde_json::from_str(&text).unwrap();
        let q = Position::new(&back, now);
        assert_eq!(q.ranges(), [(1, 2), (4, 6)]);
        assert_eq!((q.committed, q.high, q.high_created_at), (7, 7, Some(1007)));
        assert!(q.gaps.values().all(|g| g.late));
        // An old payload with only a position still reads.
        let old: Checkpoint = serde_json::from_str(r#"{"outbox_seq":42}"#).unwrap();
        assert_eq!(old, Checkpoint::at(42));
    }
}
