//! Full rebuild of the index from the tables, beside the live generation.
//!
//! The new generation starts from the live generation's checkpoint, gaps
//! included, taken *before* the scan: everything that checkpoint calls
//! applied had committed before the scan began, so the scan sees it, and
//! every other change (after its `high`, or in one of its gaps) is applied
//! again by the indexer when it catches the new generation up. Applying is
//! idempotent (it loads the current row), so the overlap is harmless. A
//! change that commits after the scan read its row is never lost, however
//! long its transaction was open. Until the new generation is adopted, it
//! holds back outbox pruning at that position like a replica would.
//!
//! One rebuild runs at a time per index directory (a file lock): the CLI,
//! the admin endpoint and the indexer's own rebuilds all take it.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use tokio::sync::mpsc;

use crate::{MirrorError, Result};
use chaja_core::model::Doc;
use chaja_core::sources::Sources;
use chaja_index::common_grams::SAMPLE_ROWS;
use chaja_index::morph::{self, Analyzer};
use chaja_index::{
    common_grams, create_generation_with_grams, publish, rebuild_marker, Checkpoint, Fourgrams,
    GapRange, Morphemes, PositionsShare, RebuildLock, Trigrams,
};
use chaja_store::rows::Loaded;
use chaja_store::{outbox, Db};

use crate::quarantine::QuarantinedRow;
use crate::stages::{self, Stages};

const PAGE: i64 = 1000;
/// How often a running rebuild refreshes its hold on pruning.
const HOLD_REFRESH: Duration = Duration::from_secs(10);
/// tantivy names its indexing threads `thrd-tantivy-index{n}`; the kernel
/// keeps the first 15 bytes.
const INDEXING_THREADS: &str = "thrd-tantivy-in";
/// The analyzer pool's threads are named after this (see `reindex_locked`).
const ANALYSIS_THREADS: &str = "chaja-analyse-";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    pub generation: u64,
    pub docs: u64,
    pub outbox_seq: i64,
    /// Rows skipped because they cannot be read (see `quarantine`), at
    /// most `quarantine::MAX_ROWS` of them listed.
    pub unreadable: Vec<QuarantinedRow>,
    /// How many were skipped.
    pub skipped: u64,
    /// Where the time went.
    pub stages: Stages,
}

/// Takes the rebuild lock of the index under `root`; a conflict while
/// another rebuild (any process) holds it.
pub async fn lock(root: &Path) -> Result<RebuildLock> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || chaja_index::try_lock_rebuild(&root))
        .await??
        .ok_or_else(|| MirrorError::RebuildRunning)
}

/// How a rebuild writes its generation.
#[derive(Clone, Copy, Debug)]
pub struct RebuildOptions {
    /// Memory for each indexing thread, in bytes.
    pub writer_memory: usize,
    /// Which 4-grams keep their positions (see `chaja_index::common_grams`).
    pub positions: PositionsShare,
}

/// Builds a new generation from the tables and publishes it. A serving
/// process catches it up and swaps it in.
pub async fn reindex(
    db: &Db,
    sources: &Sources,
    root: &Path,
    options: RebuildOptions,
    show_progress: bool,
) -> Result<Rebuilt> {
    let lock = lock(root).await?;
    let bar = if show_progress {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} rows {per_sec} eta {eta}",
            )
            .expect("valid progress template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    reindex_locked(db, sources, root, lock, options, bar).await
}

/// [`reindex`] with the lock already taken (the admin endpoint takes it
/// first, so that it can answer 409 at once). `bar` counts the rows read:
/// drawn on a terminal by the CLI, hidden and read by the console.
pub async fn reindex_locked(
    db: &Db,
    sources: &Sources,
    root: &Path,
    lock: RebuildLock,
    options: RebuildOptions,
    bar: ProgressBar,
) -> Result<Rebuilt> {
    let memory = options.writer_memory;
    let started = Instant::now();
    let cpu_before = stages::process_cpu();
    let sentences_before = morph::sentence_counts();
    let live = {
        let root = root.to_path_buf();
        tokio::task::spawn_blocking(move || -> Result<_> {
            chaja_index::remove_unpublished(&root, &lock)?;
            Ok((lock, chaja_index::published_checkpoint(&root)?))
        })
        .await??
    };
    let (_lock, live) = live;
    let live = live.unwrap_or_default();
    let mut counts = Vec::with_capacity(sources.len());
    for source in sources.iter() {
        counts.push(chaja_store::rows::count_rows(db, source).await?);
    }
    let expected: i64 = counts.iter().sum();
    bar.set_length(expected.max(0) as u64);
    let sampling = Instant::now();
    let (trigrams, fourgrams) = sample_grams(db, sources, &counts, options.positions).await?;
    let sampling = sampling.elapsed();
    let common_trigrams = trigrams.common();
    let positional_fourgrams = fourgrams.common();

    let root = root.to_path_buf();
    // With a dictionary, half the cores analyse Korean, and tantivy gets
    // an indexing thread on every core; the system shares the cores
    // between them. Where sentences repeat, the analysis pool is mostly
    // idle (a sentence met before is not analysed again) and tantivy's
    // threads are what a rebuild waits on. Where few repeat, the indexing
    // threads wait on analysis instead, but an analysis thread per core
    // did not make a rebuild faster, only larger in memory: the threads
    // then fight for the same two cores. tantivy's threads each get the
    // whole memory budget and merge nothing. The measurements are in
    // docs/benchmarks/041-sentences-analysed-once.md,
    // 046-rebuild-without-merges.md and 048-novel-text-100k.md.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let analysing = match morph::analyzer() {
        Analyzer::Korean(..) => (cores / 2).max(1),
        Analyzer::Words | Analyzer::Off => 0,
    };
    let pool = match analysing {
        0 => None,
        n => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("{ANALYSIS_THREADS}{i}"))
                .build()
                .map_err(std::io::Error::other)?,
        ),
    };
    let (generation, writer) = {
        let root = root.clone();
        // tantivy's writer takes at most 8.
        let indexing_threads = cores.min(8);
        let sources = sources.clone();
        tokio::task::spawn_blocking(move || -> Result<_> {
            let generation = create_generation_with_grams(&root, &sources, &trigrams, &fourgrams)?;
            // Each indexing thread gets the whole budget: split, their
            // segments would be smaller and more of them (see above). The
            // writer merges nothing; `publish` seals the segments (see
            // `chaja_index::merges`).
            let writer = generation
                .writer_with_threads(memory.saturating_mul(indexing_threads), indexing_threads)?;
            Ok((generation, writer))
        })
        .await??
    };
    let generation_id = generation.id;
    let generation_path = generation.path.clone();
    drop(generation);
    let marker = rebuild_marker(&generation_path);
    let built = build(
        db,
        sources,
        &marker,
        live,
        &bar,
        writer,
        pool,
        expected,
        generation_id,
    )
    .await;
    let (docs, checkpoint, unreadable, skipped, mut stages) = match built {
        Ok(built) => built,
        Err(e) => {
            // Never published, so never live: remove it.
            let _ =
                tokio::task::spawn_blocking(move || std::fs::remove_dir_all(generation_path)).await;
            let _ = outbox::release(db, &marker).await;
            return Err(e);
        }
    };
    tokio::task::spawn_blocking(move || publish(&root, generation_id)).await??;
    bar.finish_and_clear();
    stages.wall = started.elapsed();
    stages.sampling = sampling;
    stages.common_trigrams = common_trigrams;
    stages.positional_fourgrams = positional_fourgrams;
    let (analysed, cached) = morph::sentence_counts();
    stages.sentences_analysed = analysed - sentences_before.0;
    stages.sentences_cached = cached - sentences_before.1;
    stages.cpu = stages::process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    tracing::info!(
        generation = generation_id,
        docs,
        outbox_seq = checkpoint.outbox_seq,
        elapsed_secs = started.elapsed().as_secs(),
        stages = ?stages,
        "reindex published"
    );
    Ok(Rebuilt {
        generation: generation_id,
        docs,
        outbox_seq: checkpoint.outbox_seq,
        unreadable,
        skipped,
        stages,
    })
}

/// Which trigrams the new generation's `grams3` holds and which 4-grams
/// keep positions in `grams4` (those in `positions` of the rows or more):
/// the common ones in a sample of [`SAMPLE_ROWS`] rows, each source's
/// share in proportion to its rows (`counts`), read from the start of its
/// key order. Only counted: the scan reads these rows again.
async fn sample_grams(
    db: &Db,
    sources: &Sources,
    counts: &[i64],
    positions: PositionsShare,
) -> Result<(Trigrams, Fourgrams)> {
    let all = counts.iter().map(|&n| n.max(0) as u64).sum::<u64>().max(1);
    let mut sample = Vec::new();
    for ((source, _), &count) in sources.ids().zip(counts) {
        let share = (SAMPLE_ROWS as u64 * count.max(0) as u64).div_ceil(all) as i64;
        if share == 0 {
            continue;
        }
        let page = chaja_store::rows::docs_page(db, sources, source, None, share).await?;
        sample.extend(page.rows.into_iter().filter_map(|row| match row {
            Loaded::Doc { doc, .. } => Some(doc),
            Loaded::Unreadable(_) => None,
        }));
    }
    Ok(tokio::task::spawn_blocking(move || common_grams(&sample, positions)).await?)
}

/// The rebuild started over HTTP, as the operator console shows it: rows
/// read so far against the rows counted at its start, and how it ended.
/// One at a time (the rebuild lock), so it keeps only the last.
#[derive(Clone, Default)]
pub struct Tracker(Arc<Mutex<Option<Run>>>);

struct Run {
    bar: ProgressBar,
    started_ms: i64,
    finished_ms: Option<i64>,
    outcome: Outcome,
}

enum Outcome {
    Running,
    /// Published; live once the indexer has caught it up and swapped it in.
    Published(u64),
    Failed(String),
}

/// Where a tracked rebuild is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RebuildState {
    /// Reading the tables into the new generation.
    Scanning,
    /// Published; the indexer is replaying the outbox onto it.
    CatchingUp,
    /// Live: searches read it.
    Done,
    Failed,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct RebuildStatus {
    pub state: RebuildState,
    /// Known once published.
    pub generation: Option<u64>,
    /// Rows read so far, of `total` counted when it started.
    pub scanned: u64,
    pub total: u64,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub error: Option<String>,
}

impl Tracker {
    /// Records a rebuild that reports its rows to `bar`, replacing the last.
    pub fn start(&self, bar: ProgressBar) {
        *self.0.lock().expect("tracker lock") = Some(Run {
            bar,
            started_ms: chaja_core::clock::now_ms(),
            finished_ms: None,
            outcome: Outcome::Running,
        });
    }

    /// Records how the current rebuild ended.
    pub fn finish(&self, result: &Result<Rebuilt>) {
        if let Some(run) = self.0.lock().expect("tracker lock").as_mut() {
            run.finished_ms = Some(chaja_core::clock::now_ms());
            run.outcome = match result {
                Ok(rebuilt) => Outcome::Published(rebuilt.generation),
                Err(e) => Outcome::Failed(e.to_string()),
            };
        }
    }

    /// The last rebuild, if any; `live` is the generation searches read.
    pub fn status(&self, live: u64) -> Option<RebuildStatus> {
        let guard = self.0.lock().expect("tracker lock");
        let run = guard.as_ref()?;
        let (state, generation, error) = match &run.outcome {
            Outcome::Running => (RebuildState::Scanning, None, None),
            Outcome::Published(g) if live >= *g => (RebuildState::Done, Some(*g), None),
            Outcome::Published(g) => (RebuildState::CatchingUp, Some(*g), None),
            Outcome::Failed(e) => (RebuildState::Failed, None, Some(e.clone())),
        };
        Some(RebuildStatus {
            state,
            generation,
            scanned: run.bar.position(),
            total: run.bar.length().unwrap_or(0),
            started_at: chaja_core::model::rfc3339(run.started_ms),
            finished_at: run.finished_ms.map(chaja_core::model::rfc3339),
            error,
        })
    }
}

/// Past this many outbox rows behind the head, a rebuild does not replay
/// from the live checkpoint but reads which ids exist (see `from_outbox`).
const REPLAY_LIMIT: i64 = 100_000;

/// Where the new generation starts: the live checkpoint, unless the outbox
/// no longer holds what it describes or it is far behind. Called once the
/// rebuild holds back pruning at the live position, so the pruned position
/// read here stays.
async fn starting_point(db: &Db, live: Checkpoint) -> Result<Checkpoint> {
    let pruned = outbox::pruned_through(db).await?;
    let high = live.high.unwrap_or(live.outbox_seq);
    if outbox::rewound(db, high, live.high_created_at).await? {
        // A restored database: its history is not the one the live index
        // followed.
        tracing::warn!(
            live_high = high,
            pruned_through = pruned,
            "the outbox restarted below the live index's position; rebuilding from what it holds"
        );
        return from_outbox(db, pruned).await;
    }
    if live.outbox_seq < pruned || outbox::max_seq(db).await? - high > REPLAY_LIMIT {
        // Pruned rows had committed before this scan, so it has them; and a
        // long replay would cost more than reading which ids exist. Gaps the
        // live index still waits on stay gaps.
        let mut checkpoint = from_outbox(db, pruned).await?;
        let below: Vec<GapRange> = live
            .gaps
            .iter()
            .filter(|g| g.first <= pruned)
            .copied()
            .collect();
        if let Some(first) = below.first() {
            checkpoint.outbox_seq = checkpoint.outbox_seq.min(first.first - 1);
        }
        checkpoint.gaps.splice(0..0, below);
        return Ok(checkpoint);
    }
    Ok(live)
}

/// A checkpoint from the outbox itself: its newest id, and every id after
/// `after` missing right now as a gap. An id visible now committed before
/// the scan, so the scan has its change; a missing one is re-read until it
/// appears or is known rolled back.
async fn from_outbox(db: &Db, after: i64) -> Result<Checkpoint> {
    use futures::TryStreamExt;
    let mut checkpoint = Checkpoint::at(after);
    let mut high = after;
    let mut gaps = Vec::new();
    let mut rows = sqlx::query_as::<_, (i64, i64)>(
        "SELECT seq, created_at FROM search_outbox WHERE seq > ? ORDER BY seq",
    )
    .bind(after)
    .fetch(&db.pool);
    while let Some((seq, created_at)) = rows.try_next().await? {
        if seq > high + 1 {
            gaps.push(GapRange {
                first: high + 1,
                last: seq - 1,
                late: false,
            });
        }
        high = seq;
        checkpoint.high_created_at = Some(created_at);
    }
    checkpoint.outbox_seq = gaps.first().map_or(high, |g| g.first - 1);
    checkpoint.high = Some(high);
    checkpoint.gaps = gaps;
    Ok(checkpoint)
}

/// What [`build`] returns: the documents written, the checkpoint
/// committed, the rows skipped (listed, and counted) and the stage times.
type Built = (u64, Checkpoint, Vec<QuarantinedRow>, u64, Stages);

/// Holds back pruning, scans the tables into `writer` and commits.
#[allow(clippy::too_many_arguments)]
async fn build(
    db: &Db,
    sources: &Sources,
    marker: &str,
    live: Checkpoint,
    bar: &ProgressBar,
    mut writer: chaja_index::DocWriter,
    pool: Option<rayon::ThreadPool>,
    expected: i64,
    generation_id: u64,
) -> Result<Built> {
    outbox::hold_for_rebuild(db, marker, live.low_water()).await?;
    // A prune that read the replicas' positions before the hold existed
    // may still be deleting rows: if it commits while the starting point
    // is read, the rows it took look like gaps there, and the checkpoint
    // ends below what was pruned (the replica that adopts it would call
    // itself behind and rebuild again). So the starting point is read
    // again until no prune committed across it. A prune that starts later
    // reads the hold and stays at or below it, so this ends.
    let checkpoint = loop {
        let pruned = outbox::pruned_through(db).await?;
        let checkpoint = starting_point(db, live.clone()).await?;
        outbox::hold_for_rebuild(db, marker, checkpoint.low_water()).await?;
        if outbox::pruned_through(db).await? == pruned {
            break checkpoint;
        }
        tracing::debug!("outbox pruned while the rebuild read its starting point; reading again");
    };
    tracing::info!(
        generation = generation_id,
        outbox_seq = checkpoint.outbox_seq,
        gaps = checkpoint.gaps.len(),
        rows = expected,
        "reindex started"
    );

    // Reading pages and indexing them overlap: the blocking side owns the
    // writer and the async side keeps the next page coming.
    let (tx, mut rx) = mpsc::channel::<Vec<Doc>>(4);
    let committed = checkpoint.clone();
    let indexing = tokio::task::spawn_blocking(move || -> Result<(u64, Stages)> {
        let mut stages = Stages::default();
        // Analysis runs a page ahead of indexing, on a thread of its own:
        // while tantivy's threads are busy with one page (and make the
        // feeding thread wait), the analyzer works on the next page instead
        // of waiting too.
        let (analysed_tx, analysed_rx) = std::sync::mpsc::sync_channel::<(Vec<Doc>, _)>(1);
        let docs = std::thread::scope(|scope| -> Result<u64> {
            let analyser = scope.spawn(move || {
                let mut busy = Duration::ZERO;
                while let Some(page) = rx.blocking_recv() {
                    let analysing = Instant::now();
                    let morphemes: Vec<Morphemes> = match &pool {
                        Some(pool) => pool.install(|| page.par_iter().map(Morphemes::of).collect()),
                        None => page.iter().map(Morphemes::of).collect(),
                    };
                    busy += analysing.elapsed();
                    if analysed_tx.send((page, morphemes)).is_err() {
                        break; // the writer failed; dropping `rx` stops the reading
                    }
                }
                // Sampled before the pool and its threads end.
                let cpu = pool
                    .as_ref()
                    .and_then(|_| stages::threads_cpu(ANALYSIS_THREADS));
                (busy, cpu)
            });
            let mut docs = 0u64;
            let fed = (|| -> Result<()> {
                loop {
                    let waiting = Instant::now();
                    let Ok((page, morphemes)) = analysed_rx.recv() else {
                        return Ok(());
                    };
                    let adding = Instant::now();
                    stages.analysis_wait += adding - waiting;
                    for (doc, morphemes) in page.iter().zip(morphemes) {
                        writer.add(doc, morphemes)?;
                    }
                    stages.indexing_wait += adding.elapsed();
                    docs += page.len() as u64;
                }
            })();
            // On a failure the analyser stops at its next page.
            drop(analysed_rx);
            let (busy, cpu) = analyser.join().expect("the analysis thread does not panic");
            (stages.analysis, stages.analysis_cpu) = (busy, cpu);
            fed.map(|()| docs)
        })?;
        // Sampled while tantivy's indexing threads are alive: they end with
        // the commit. The commit's own indexing (the last documents in
        // memory) falls under `commit`.
        stages.indexing_cpu = stages::threads_cpu(INDEXING_THREADS);
        let committing = Instant::now();
        writer.commit_checkpoint(&committed)?;
        let merging = Instant::now();
        stages.commit = merging - committing;
        writer.wait_merging_threads()?;
        stages.merging = merging.elapsed();
        Ok((docs, stages))
    });

    let mut read_error = None;
    let mut reported = Instant::now();
    let mut reading = Duration::ZERO;
    let (mut unreadable, mut skipped) = (Vec::new(), 0u64);
    'kinds: for (source, _) in sources.ids() {
        let mut after = None;
        loop {
            let asked = Instant::now();
            let page =
                chaja_store::rows::docs_page(db, sources, source, after.as_ref(), PAGE).await;
            reading += asked.elapsed();
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    read_error = Some(e);
                    break 'kinds;
                }
            };
            bar.inc(page.rows.len() as u64);
            let last_page = page.next.is_none();
            after = page.next;
            let mut docs = Vec::with_capacity(page.rows.len());
            for row in page.rows {
                match row {
                    Loaded::Doc { doc, .. } => docs.push(doc),
                    // Skipped and listed: the rebuild goes on.
                    Loaded::Unreadable(row) => {
                        skipped += 1;
                        let row = unreadable_row(sources, row);
                        tracing::warn!(
                            source = row.source,
                            key = row.key,
                            reason = row.reason,
                            "reindex skips a row that cannot be read"
                        );
                        if unreadable.len() < crate::quarantine::MAX_ROWS {
                            unreadable.push(row);
                        }
                    }
                }
            }
            if !docs.is_empty() && tx.send(docs).await.is_err() {
                break 'kinds; // the writer failed; its error is reported below
            }
            // Still alive: a hold not refreshed within the retention window
            // stops holding back pruning.
            if reported.elapsed() >= HOLD_REFRESH {
                if let Err(e) = outbox::hold_for_rebuild(db, marker, checkpoint.low_water()).await {
                    // Stop reading; the writer finishes before the
                    // generation is removed.
                    read_error = Some(e);
                    break 'kinds;
                }
                reported = Instant::now();
            }
            if last_page {
                break;
            }
        }
    }
    drop(tx);
    tracing::info!(
        generation = generation_id,
        "reindex read every row; committing"
    );
    let indexed = indexing.await?;
    match (read_error, indexed) {
        (None, Ok((docs, stages))) => {
            let stages = Stages { reading, ..stages };
            Ok((docs, checkpoint, unreadable, skipped, stages))
        }
        (Some(e), _) => Err(e.into()),
        (None, Err(e)) => Err(e),
    }
}

/// A row a full pass could not read, as the quarantine lists it.
pub(crate) fn unreadable_row(
    sources: &Sources,
    row: chaja_store::rows::Unreadable,
) -> QuarantinedRow {
    QuarantinedRow {
        source: sources.get(row.source).name.clone(),
        key: row.key,
        reason: row.reason,
        at_ms: chaja_core::clock::now_ms(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chaja_index::create_generation;

    /// The stages find their threads by name; a wrong prefix would report
    /// no CPU at all rather than fail, so the names are checked here.
    #[test]
    fn the_stage_thread_names_match_live_threads() {
        let alive = |prefix: &str| {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .flatten()
                .any(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|name| name.starts_with(prefix))
                })
        };
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let writer = generation.writer_with_threads(50_000_000, 1).unwrap();
        // A new thread names itself once it runs, so give it a moment; no
        // wait makes a wrong prefix match.
        let named = (0..100).any(|_| {
            let found = alive(INDEXING_THREADS);
            if !found {
                std::thread::sleep(Duration::from_millis(10));
            }
            found
        });
        assert!(named, "tantivy's indexing thread");
        drop(writer);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|i| format!("{ANALYSIS_THREADS}{i}"))
            .build()
            .unwrap();
        pool.install(|| assert!(alive(ANALYSIS_THREADS), "the analysis pool"));
    }
}
