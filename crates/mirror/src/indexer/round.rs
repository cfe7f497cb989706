//! One round of the tail: check the gaps that are due, read the next
//! changes and the rows they name in one transaction, apply, commit.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use chaja_core::model::Doc;
use chaja_core::sources::{SourceId, Sources};
use chaja_index::{Checkpoint, DocWriter, Generation, Indexed, Morphemes, Pace};
use chaja_store::outbox::{self, OutboxRow};
use chaja_store::rows::Loaded;

use super::position::{Position, MAX_GAP_RUNS};
use super::Indexer;
use crate::quarantine::Quarantine;
use crate::Result;

/// Loads the current state of `ids` on `conn` into `work`: the row, or
/// `None` (delete) for a row that is gone, or that cannot be read (it is
/// put in `quarantine`, and an older version of it leaves the index).
pub(super) async fn load_into(
    work: &mut Work,
    conn: &mut sqlx::AnyConnection,
    sources: &Sources,
    keys: BTreeMap<SourceId, BTreeSet<String>>,
    quarantine: &Quarantine,
) -> Result<()> {
    for (source, keys) in keys {
        let keys: Vec<String> = keys.into_iter().collect();
        let loaded = chaja_store::rows::load_docs(conn, sources, source, &keys).await?;
        let mut found: BTreeMap<String, Loaded> =
            loaded.into_iter().map(|l| (l.key_text(), l)).collect();
        let name = &sources.get(source).name;
        for key in keys {
            let doc = match found.remove(&key) {
                Some(Loaded::Doc { doc, lossy }) => {
                    if lossy {
                        metrics::counter!("rows_read_lossily_total").increment(1);
                    }
                    quarantine.release(name, &key);
                    Some(doc)
                }
                Some(Loaded::Unreadable(row)) => {
                    quarantine.record(name, &row.key, &row.reason);
                    None
                }
                None => {
                    quarantine.release(name, &key);
                    None
                }
            };
            work.push((source, key, doc));
        }
    }
    Ok(())
}

/// Rows whose morphemes the analysis thread may find ahead of the one
/// tantivy is handed: enough that the indexing thread never waits for
/// one, few enough to hold little memory.
const ANALYSED_AHEAD: usize = 64;

/// The thread the indexer's rounds analyse rows on: one for the
/// process, so that lindera's per-thread buffers stay warm from round to
/// round.
fn analysis_thread() -> Result<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    if let Some(pool) = POOL.get() {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "chaja-analysis".to_owned())
        .build()
        .map_err(std::io::Error::other)?;
    Ok(POOL.get_or_init(|| pool))
}

/// How a round that rewrites `writes` rows, in rounds of up to `batch`,
/// hands them to the writer: spread over its indexing threads when they
/// are half a batch or more (a backlog of text changes, where the round
/// would otherwise wait on one thread while a core idles), and as one
/// batch on one thread otherwise, so that its commit ends one segment (see
/// [`Pace`]).
fn pace(writes: usize, batch: i64) -> Pace {
    if writes as i64 * 2 >= batch.max(2) {
        Pace::Burst
    } else {
        Pace::Steady
    }
}

/// Batches of outbox rows one round may read while they name few keys.
const COALESCE_ROUNDS: i64 = 16;

/// The (source, key) pairs outbox rows name.
fn distinct_keys(rows: &[OutboxRow]) -> std::collections::HashSet<(String, String)> {
    rows.iter()
        .filter_map(|r| r.change.as_ref())
        .map(|c| (c.entity_type.clone(), c.key.clone()))
        .collect()
}

/// Outbox ids committed on the primary.
#[derive(Default)]
pub(super) struct Committed(BTreeSet<i64>);

impl Committed {
    pub(super) fn contains(&self, first: i64, last: i64) -> bool {
        self.0.range(first..=last).next().is_some()
    }
}

/// Rows to upsert (`Some`) or delete (`None`).
pub(super) type Work = Vec<(SourceId, String, Option<Doc>)>;

/// One batch read from the database.
pub(super) struct Batch {
    /// Every outbox row read: new ones and filled gaps.
    pub(super) rows: Vec<OutboxRow>,
    /// How many were new (after `high`): a full batch means more is waiting.
    pub(super) new: usize,
    pub(super) work: Work,
}

/// A generation being kept in step with the outbox: the live one, or a
/// rebuilt one catching up before it is swapped in.
pub(super) struct Tail {
    pub(super) generation: Arc<Generation>,
    /// On loan to a blocking thread during a commit.
    pub(super) writer: Option<DocWriter>,
    pub(super) position: Position,
    /// Rows to reload in the next round whatever the outbox says.
    pub(super) heal: Vec<(SourceId, String)>,
    /// `key` terms of patched rows among `heal` to rewrite whole in the
    /// next round, dropping their patches (see [`Tail::fold_patches`]).
    pub(super) fold: HashSet<String>,
    /// The last round failed after it may have committed: reload before
    /// planning against the view.
    pub(super) stale: bool,
}

impl Tail {
    /// Queues up to `batch` patched rows to be rewritten whole when the
    /// generation holds more than `max` patches: each costs memory for as
    /// long as it lives (its values, kept for every search), so they are
    /// folded back into documents, a batch per round whatever the load
    /// (rounds plan no new patch past the bound either: see `plan`).
    /// Returns whether any was queued.
    pub(super) fn fold_patches(&mut self, max: usize, batch: usize) -> bool {
        let patches = self.generation.view().patches.clone();
        let excess = patches.len().saturating_sub(max);
        if excess == 0 {
            return false;
        }
        for key in patches.keys().take(excess.min(batch)) {
            if let Some((source, key_text)) = chaja_index::parse_key_term(key) {
                self.heal.push((source, key_text.to_owned()));
                self.fold.insert(key.to_owned());
            }
        }
        !self.fold.is_empty()
    }

    /// Runs `f` with the writer on a blocking thread (tantivy's writes and
    /// commits block) and puts the writer back.
    async fn with_writer<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut DocWriter) -> T + Send + 'static,
    ) -> T {
        let mut writer = self.writer.take().expect("writer present between rounds");
        let joined = tokio::task::spawn_blocking(move || {
            let out = f(&mut writer);
            (writer, out)
        })
        .await;
        let (writer, out) = match joined {
            Ok(done) => done,
            Err(join) => panic!("index writer thread panicked: {join}"),
        };
        self.writer = Some(writer);
        out
    }
}

/// What a round did.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Round {
    /// Outbox rows read after `high`.
    pub(super) new: usize,
    /// Documents changed.
    pub(super) changed: bool,
}

impl Indexer {
    /// The next changes, the gaps re-read, and the current state of their
    /// rows, in one transaction: every row state is then at least as new as
    /// the outbox rows that point at it. Separate statements on pooled
    /// connections could each see a different snapshot, and an older row
    /// read after a newer outbox row would be recorded as applied.
    pub(super) async fn read_batch(
        &self,
        position: &Position,
        heal: &[(SourceId, String)],
    ) -> Result<Batch> {
        let mut tx = self.read.pool.begin().await?;
        let mut rows = if position.gaps.len() < MAX_GAP_RUNS {
            // A burst of changes to a few rows (a counter a filter reads,
            // an attribute) is many outbox rows and few keys: read on, in
            // the same snapshot, while the batch has fewer distinct keys
            // than its size, so that they cost one load and one write each
            // however many outbox rows they fill.
            let mut rows = outbox::changes_after(&mut tx, position.high, self.config.batch).await?;
            let mut keys: std::collections::HashSet<(String, String)> = distinct_keys(&rows);
            while rows.len() as i64 % self.config.batch == 0
                && !rows.is_empty()
                && (keys.len() as i64) < self.config.batch
                && (rows.len() as i64) < self.config.batch * COALESCE_ROUNDS
            {
                let after = rows.last().map_or(position.high, |r| r.seq);
                let more = outbox::changes_after(&mut tx, after, self.config.batch).await?;
                if more.is_empty() {
                    break;
                }
                keys.extend(distinct_keys(&more));
                rows.extend(more);
            }
            rows
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
                .and_then(|c| Some((sources.by_name(&c.entity_type)?, c)));
            match source {
                // A key that is not valid text names no row the index can
                // hold: put aside, the position moves past it.
                Some((_, change)) if change.unreadable => self.handle.quarantine.record(
                    &change.entity_type,
                    &change.key,
                    "its key is not valid UTF-8",
                ),
                Some((source, change)) => {
                    ids.entry(source).or_default().insert(change.key.clone());
                }
                None if row.probe => {}
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
        let quarantine = &self.handle.quarantine;
        load_into(&mut work, &mut tx, sources, ids, quarantine).await?;
        tx.commit().await?;
        if !healing.is_empty() {
            let mut primary = self.db.pool.begin().await?;
            load_into(&mut work, &mut primary, sources, healing, quarantine).await?;
            primary.commit().await?;
        }
        Ok(Batch { rows, new, work })
    }

    /// The outbox ids in `ranges` that the primary has committed, when rows
    /// are read from a replica (which may not have them yet). Reading from
    /// the primary itself, none need waiting for: the read that follows
    /// sees what the settling check saw.
    pub(super) async fn on_primary(&self, ranges: &[(i64, i64)]) -> Result<Committed> {
        if !self.replica {
            return Ok(Committed::default());
        }
        let mut conn = self.db.pool.acquire().await?;
        let rows = outbox::changes_in_ranges(&mut conn, ranges).await?;
        Ok(Committed(rows.iter().map(|r| r.seq).collect()))
    }

    /// One batch on one tail: check gaps that are due, read, apply, commit.
    pub(super) async fn round(&self, tail: &mut Tail) -> Result<Round> {
        if tail.stale {
            let generation = tail.generation.clone();
            tokio::task::spawn_blocking(move || generation.reload()).await??;
            tail.stale = false;
        }
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
            if tail.generation.hold_merges(false) {
                // A burst ended on a full round: commit nothing, so that
                // tantivy looks for the merges it held (it does at commits).
                let checkpoint = tail.position.checkpoint();
                tail.with_writer(move |writer| writer.commit_checkpoint(&checkpoint))
                    .await?;
            }
            return Ok(round);
        }
        let checkpoint = next.checkpoint();
        // A full batch: more is waiting. Merges of the burst's segments
        // wait for the round that empties it (see `chaja_index` `merges`).
        tail.generation
            .hold_merges(round.new as i64 >= self.config.batch);
        let generation = tail.generation.clone();
        let work = batch.work;
        let batch = self.config.batch;
        let max_patches = self.config.max_patches;
        let fold = std::mem::take(&mut tail.fold);
        let span = tracing::debug_span!(
            "index_commit",
            changes = work.len(),
            outbox_seq = checkpoint.outbox_seq
        );
        let result = tail
            .with_writer(move |writer| {
                let _enter = span.enter();
                apply(
                    writer,
                    &generation,
                    &work,
                    &fold,
                    &checkpoint,
                    batch,
                    max_patches,
                )
            })
            .await;
        // A round that failed may have committed before it failed (its
        // reload, say): the view the next round plans against must show
        // that commit, or a row deleted here and restored as it was would
        // be planned as unchanged and stay deleted.
        tail.stale |= result.is_err();
        let changed = result?;
        if Arc::ptr_eq(&tail.generation, &self.index.live()) {
            self.handle.progress.applied(changed as u64);
        }
        let round = Round {
            changed: changed > 0,
            ..round
        };
        tail.position = next;
        tail.heal.clear();
        if Arc::ptr_eq(&tail.generation, &self.index.live()) {
            self.handle
                .progress
                .committed_up_to(tail.position.committed, tail.position.high);
            if round.changed {
                self.handle.progress.changed();
            }
        }
        Ok(round)
    }
}

/// Drops a tail's writer on a blocking thread: it joins tantivy's threads.
pub(super) async fn close(tail: Tail) {
    let _ = tokio::task::spawn_blocking(move || drop(tail)).await;
}

/// What applying one loaded row does to the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// The index holds the row as it is: no analysis, no write.
    Keep,
    /// Only attributes changed: a patch (see `chaja_index` `patches`).
    Patch,
    /// The attributes are back to the document's own: drop the patch.
    Unpatch,
    /// Text, time or key changed, or the row is new: analyse and rewrite.
    Write,
    Delete,
}

/// Decides each row's [`Action`] against what the index holds
/// (`indexed`), in the work's order: a key met twice (a healed row) is
/// decided the second time against what the first left.
///
/// A row is rewritten whole, even when its attributes alone changed or
/// nothing did, when:
/// - the index holds it more than once: a rewrite deletes every copy and
///   adds one, however alike the copies are;
/// - its `key` term is in `fold` and it is patched;
/// - it would be newly patched and `room` new patches are already
///   planned: the bound on patches holds in every round, under any load
///   (a patch costs memory for as long as it lives; a rewrite costs its
///   analysis once, like any text edit of the round).
fn plan(
    work: &[(SourceId, String, Option<Doc>)],
    mut indexed: HashMap<String, Indexed>,
    fold: &HashSet<String>,
    mut room: usize,
) -> Vec<Action> {
    work.iter()
        .map(|(source, key, doc)| {
            let term = chaja_index::key_term(*source, key);
            let Some(doc) = doc else {
                indexed.remove(&term);
                return Action::Delete;
            };
            let digest = doc.digest();
            let held = indexed.get(&term).copied();
            let rewrite =
                held.is_some_and(|h| h.copies > 1 || fold.contains(&term) && h.patched.is_some());
            let (action, now) = match held {
                Some(held) if held.current() == digest && !rewrite => (Action::Keep, held),
                Some(held) if held.text_digest == doc.text_digest() && !rewrite => {
                    match (held.digest == digest, held.patched.is_some()) {
                        (true, _) => (
                            Action::Unpatch,
                            Indexed {
                                patched: None,
                                ..held
                            },
                        ),
                        (false, true) => (
                            Action::Patch,
                            Indexed {
                                patched: Some(digest),
                                ..held
                            },
                        ),
                        (false, false) if room > 0 => {
                            room -= 1;
                            (
                                Action::Patch,
                                Indexed {
                                    patched: Some(digest),
                                    ..held
                                },
                            )
                        }
                        (false, false) => (Action::Write, written(doc)),
                    }
                }
                _ => (Action::Write, written(doc)),
            };
            indexed.insert(term, now);
            action
        })
        .collect()
}

/// What the index holds of `doc` once it is written whole.
fn written(doc: &Doc) -> Indexed {
    Indexed {
        digest: doc.digest(),
        text_digest: doc.text_digest(),
        patched: None,
        copies: 1,
    }
}

/// Applies changes and commits them with `checkpoint`; blocking. A row
/// whose content digest (text, time, key, attributes) equals the one the
/// index holds for it is left alone, whatever column the change was in;
/// one whose attributes alone changed is patched, with no analysis and no
/// delete and add of its document. A round that rewrites half a batch or
/// more is a burst (see [`pace`]). Returns the rows that changed.
pub(super) fn apply(
    writer: &mut DocWriter,
    generation: &Generation,
    work: &[(SourceId, String, Option<Doc>)],
    fold: &HashSet<String>,
    checkpoint: &Checkpoint,
    batch: i64,
    max_patches: usize,
) -> Result<usize> {
    let started = Instant::now();
    let upserts: Vec<(SourceId, &str)> = work
        .iter()
        .filter(|(_, _, doc)| doc.is_some())
        .map(|(source, key, _)| (*source, key.as_str()))
        .collect();
    let room = max_patches.saturating_sub(generation.view().patches.len());
    let actions = plan(work, generation.indexed(&upserts)?, fold, room);
    let planned = started.elapsed();
    // The rows to write. Their morphemes are found on the analysis thread
    // while the loop below hands the rows before them to tantivy's
    // indexing threads (in a burst; otherwise they are held for one batch
    // at the commit, see `Pace`). Found all first, even on every core,
    // they kept the indexing thread idle for the first third of each round.
    let writes: Vec<&Doc> = work
        .iter()
        .zip(&actions)
        .filter(|(_, action)| **action == Action::Write)
        .filter_map(|((_, _, doc), _)| doc.as_ref())
        .collect();
    let pace = pace(writes.len(), batch);
    writer.set_pace(pace)?;
    let (changed, kept, patched) = analysis_thread()?.in_place_scope(|scope| -> Result<_> {
        let (found, morphemes) = std::sync::mpsc::sync_channel(ANALYSED_AHEAD);
        scope.spawn(move |_| {
            for doc in writes {
                // Refused when the loop below stopped at an error.
                if found.send(Morphemes::of(doc)).is_err() {
                    return;
                }
            }
        });
        let (mut changed, mut kept, mut patched) = (0, 0, 0);
        for ((source, key, doc), action) in work.iter().zip(actions) {
            match (action, doc) {
                (Action::Keep, _) => {
                    kept += 1;
                    continue;
                }
                (Action::Write, Some(doc)) => {
                    // The analysis sends one per write, unless it panicked
                    // (the scope raises that panic when this returns): never
                    // commit a round without all of its rows.
                    let Ok(found) = morphemes.recv() else {
                        return Err(std::io::Error::other("the analysis thread stopped").into());
                    };
                    writer.upsert_with(doc, found)?;
                }
                (Action::Patch, Some(doc)) => {
                    writer.patch(doc)?;
                    patched += 1;
                }
                (Action::Unpatch, _) => {
                    writer.unpatch(*source, key);
                    patched += 1;
                }
                (Action::Delete, _) | (Action::Write | Action::Patch, None) => {
                    writer.delete(*source, key)
                }
            }
            changed += 1;
        }
        Ok((changed, kept, patched))
    })?;
    if kept > 0 {
        metrics::counter!("index_changes_unchanged_total").increment(kept);
    }
    if patched > 0 {
        metrics::counter!("index_changes_patched_total").increment(patched);
    }
    let fed = started.elapsed();
    writer.commit_checkpoint(checkpoint)?;
    let committed = started.elapsed();
    // Also builds the new segments' arrays (see `Generation::prime`):
    // the next query need not.
    generation.reload()?;
    // Where a round's time goes, as times since its start: analysis and
    // tantivy's indexing threads overlap until `fed` (in a burst); the
    // commit then waits for them to index what they were handed and write
    // their segments.
    tracing::debug!(
        rows = work.len(),
        ?pace,
        planned_ms = planned.as_millis() as u64,
        fed_ms = fed.as_millis() as u64,
        committed_ms = committed.as_millis() as u64,
        reloaded_ms = started.elapsed().as_millis() as u64,
        "applied a round"
    );
    if pace == Pace::Burst {
        metrics::counter!("index_burst_rounds_total").increment(1);
    }
    metrics::histogram!("index_commit_seconds").record(started.elapsed().as_secs_f64());
    metrics::counter!("index_changes_applied_total").increment(changed as u64);
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chaja_core::model::{AttrValue, Key};

    fn row(text: &str, likes: i64) -> Doc {
        Doc {
            source: SourceId::from_index(0),
            key: Key::Int(1),
            title: Some("제목".to_owned()),
            body: vec![text.to_owned()],
            created_at: 1_000,
            attributes: vec![("likes".to_owned(), AttrValue::Int(likes))],
        }
    }

    fn held(doc: &Doc, patched: Option<&Doc>) -> HashMap<String, Indexed> {
        let indexed = Indexed {
            digest: doc.digest(),
            text_digest: doc.text_digest(),
            patched: patched.map(Doc::digest),
            copies: 1,
        };
        HashMap::from([(chaja_index::key_term(doc.source, "1"), indexed)])
    }

    /// Room for more patches than any test plans.
    const ROOM: usize = 100;

    fn one(doc: Doc) -> Vec<(SourceId, String, Option<Doc>)> {
        vec![(doc.source, "1".to_owned(), Some(doc))]
    }

    #[test]
    fn each_change_is_planned_as_the_least_work_that_applies_it() {
        let base = row("본문", 1);
        let plan_of = |doc: Doc, patched: Option<&Doc>| {
            plan(&one(doc), held(&base, patched), &HashSet::new(), ROOM)[0]
        };
        assert_eq!(plan_of(base.clone(), None), Action::Keep);
        assert_eq!(plan_of(row("본문", 2), None), Action::Patch);
        assert_eq!(plan_of(row("본문", 2), Some(&row("본문", 2))), Action::Keep);
        assert_eq!(
            plan_of(row("본문", 3), Some(&row("본문", 2))),
            Action::Patch
        );
        assert_eq!(
            plan_of(row("본문", 1), Some(&row("본문", 2))),
            Action::Unpatch
        );
        assert_eq!(plan_of(row("바뀐 본문", 1), None), Action::Write);
        assert_eq!(
            plan_of(row("바뀐 본문", 2), Some(&row("본문", 2))),
            Action::Write
        );
        let new = plan(&one(row("본문", 1)), HashMap::new(), &HashSet::new(), ROOM);
        assert_eq!(new, vec![Action::Write]);
        let gone = vec![(SourceId::from_index(0), "1".to_owned(), None)];
        assert_eq!(
            plan(&gone, held(&base, None), &HashSet::new(), ROOM),
            vec![Action::Delete]
        );
    }

    #[test]
    fn only_a_round_that_rewrites_half_a_batch_or_more_is_a_burst() {
        assert_eq!(pace(0, 2000), Pace::Steady);
        assert_eq!(pace(999, 2000), Pace::Steady);
        assert_eq!(pace(1000, 2000), Pace::Burst);
        assert_eq!(pace(2000, 2000), Pace::Burst);
        assert_eq!(pace(2, 5), Pace::Steady);
        assert_eq!(pace(3, 5), Pace::Burst);
        assert_eq!(pace(0, 1), Pace::Steady);
        assert_eq!(pace(1, 1), Pace::Burst);
    }

    #[test]
    fn a_folded_row_is_rewritten_whole_only_while_it_is_patched() {
        let base = row("본문", 1);
        let fold = HashSet::from([chaja_index::key_term(base.source, "1")]);
        let now = row("본문", 2);
        let planned =
            |patched: Option<&Doc>| plan(&one(now.clone()), held(&base, patched), &fold, ROOM);
        assert_eq!(planned(Some(&now)), vec![Action::Write]);
        assert_eq!(planned(None), vec![Action::Patch]);
        let unchanged = plan(&one(base.clone()), held(&base, None), &fold, ROOM);
        assert_eq!(unchanged, vec![Action::Keep]);
    }

    #[test]
    fn a_key_met_twice_is_planned_against_what_the_first_left() {
        let base = row("본문", 1);
        // Rewritten with new text, then (a healed read) its likes alone:
        // a patch on the new document, not on the old one.
        let mut work = one(row("새 본문", 1));
        work.extend(one(row("새 본문", 5)));
        assert_eq!(
            plan(&work, held(&base, None), &HashSet::new(), ROOM),
            vec![Action::Write, Action::Patch]
        );
        // Deleted, then found again: written anew.
        let mut work = vec![(SourceId::from_index(0), "1".to_owned(), None)];
        work.extend(one(row("본문", 2)));
        assert_eq!(
            plan(&work, held(&base, None), &HashSet::new(), ROOM),
            vec![Action::Delete, Action::Write]
        );
    }

    /// A row the index holds twice is rewritten, which ends every copy,
    /// even when the copies are as the table has it: planned as unchanged,
    /// healing and `verify --repair` left the second copy for ever.
    #[test]
    fn a_row_held_twice_is_rewritten_however_alike_its_copies() {
        let base = row("본문", 1);
        let mut twice = held(&base, None);
        for indexed in twice.values_mut() {
            indexed.copies = 2;
        }
        let planned = |doc: Doc| plan(&one(doc), twice.clone(), &HashSet::new(), ROOM);
        assert_eq!(planned(base.clone()), vec![Action::Write]);
        assert_eq!(planned(row("본문", 2)), vec![Action::Write]);
        // Met again in the same round, the row is held once.
        let mut work = one(base.clone());
        work.extend(one(base.clone()));
        assert_eq!(
            plan(&work, twice.clone(), &HashSet::new(), ROOM),
            vec![Action::Write, Action::Keep]
        );
    }

    /// Past the bound a round plans no new patch: the row is rewritten
    /// whole. A row already patched is patched again (its patch replaced,
    /// no new one), and dropping a patch needs no room.
    #[test]
    fn no_new_patch_is_planned_past_the_bound() {
        let rows = |n: i64| -> (Work, HashMap<String, Indexed>) {
            let mut work = Vec::new();
            let mut indexed = HashMap::new();
            for i in 0..n {
                let mut doc = row("본문", 1);
                doc.key = Key::Int(i);
                indexed.insert(
                    chaja_index::key_term(doc.source, &i.to_string()),
                    written(&doc),
                );
                doc.attributes = vec![("likes".to_owned(), AttrValue::Int(2))];
                work.push((doc.source, i.to_string(), Some(doc)));
            }
            (work, indexed)
        };
        let (work, indexed) = rows(5);
        let planned = plan(&work, indexed.clone(), &HashSet::new(), 3);
        assert_eq!(
            planned,
            [
                Action::Patch,
                Action::Patch,
                Action::Patch,
                Action::Write,
                Action::Write
            ]
        );
        assert_eq!(plan(&work, indexed, &HashSet::new(), 0), [Action::Write; 5]);
        let base = row("본문", 1);
        let patched = held(&base, Some(&row("본문", 2)));
        assert_eq!(
            plan(&one(row("본문", 3)), patched.clone(), &HashSet::new(), 0),
            vec![Action::Patch]
        );
        assert_eq!(
            plan(&one(base.clone()), patched, &HashSet::new(), 0),
            vec![Action::Unpatch]
        );
    }
}
