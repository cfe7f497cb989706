//! Full rebuild of the index from the tables, beside the live generation.
//!
//! The outbox position is noted *before* the scan and recorded in the new
//! generation, so every change made during the scan is applied again by the
//! indexer afterwards. Applying is idempotent (it loads the current row), so
//! the overlap is harmless and nothing written during the scan is missed.

use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use tokio::sync::mpsc;

use crate::db::{outbox, Db};
use crate::error::Result;
use crate::index::morph::{self, Analyzer};
use crate::index::{create_generation, publish, Morphemes};
use crate::model::{Doc, Kind};

const PAGE: i64 = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    pub generation: u64,
    pub docs: u64,
    pub outbox_seq: i64,
}

/// Builds a new generation from the tables and publishes it. A serving
/// process picks it up on its indexer's next round.
pub async fn reindex(db: &Db, root: &Path, memory: usize, show_progress: bool) -> Result<Rebuilt> {
    let started = std::time::Instant::now();
    // Pruned rows were applied by everyone; an empty outbox after a prune
    // still has a position.
    let outbox_seq = outbox::max_seq(db)
        .await?
        .max(outbox::pruned_through(db).await?);
    let expected = outbox::count_rows(db, Kind::Question).await?
        + outbox::count_rows(db, Kind::Review).await?;
    let bar = if show_progress {
        let bar = ProgressBar::new(expected.max(0) as u64);
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

    let root = root.to_path_buf();
    // With a dictionary, half the cores analyse Korean and the other half
    // run tantivy's indexing threads (see `index::Morphemes`); without one
    // there is little to analyse and tantivy gets every core.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let analysing = match morph::analyzer() {
        Analyzer::Korean(_) => (cores / 2).max(1),
        Analyzer::Words | Analyzer::Off => 0,
    };
    let pool = match analysing {
        0 => None,
        n => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("chaja-analyse-{i}"))
                .build()
                .map_err(std::io::Error::other)?,
        ),
    };
    let (generation, mut writer) = {
        let root = root.clone();
        let indexing_threads = cores.saturating_sub(analysing).max(1);
        tokio::task::spawn_blocking(move || -> Result<_> {
            let generation = create_generation(&root)?;
            let writer = generation.writer_with_threads(memory, indexing_threads)?;
            Ok((generation, writer))
        })
        .await??
    };
    let generation_id = generation.id;
    let generation_path = generation.path.clone();
    drop(generation);
    tracing::info!(
        generation = generation_id,
        outbox_seq,
        rows = expected,
        "reindex started"
    );

    // Reading pages and indexing them overlap: the blocking side owns the
    // writer and the async side keeps the next page coming.
    let (tx, mut rx) = mpsc::channel::<Vec<Doc>>(4);
    let indexing = tokio::task::spawn_blocking(move || -> Result<u64> {
        let mut docs = 0u64;
        while let Some(page) = rx.blocking_recv() {
            let morphemes: Vec<Morphemes> = match &pool {
                Some(pool) => pool.install(|| page.par_iter().map(Morphemes::of).collect()),
                None => page.iter().map(Morphemes::of).collect(),
            };
            for (doc, morphemes) in page.iter().zip(morphemes) {
                writer.add(doc, morphemes)?;
            }
            docs += page.len() as u64;
        }
        writer.commit(outbox_seq)?;
        writer.wait_merging_threads()?;
        Ok(docs)
    });

    let mut read_error = None;
    'kinds: for kind in [Kind::Question, Kind::Review] {
        let mut after = 0;
        loop {
            let page = match outbox::docs_page(db, kind, after, PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    read_error = Some(e);
                    break 'kinds;
                }
            };
            let Some(last) = page.last() else { break };
            after = last.id;
            bar.inc(page.len() as u64);
            if tx.send(page).await.is_err() {
                break 'kinds; // the writer failed; its error is reported below
            }
        }
    }
    drop(tx);
    tracing::info!(
        generation = generation_id,
        elapsed_secs = started.elapsed().as_secs(),
        "reindex read every row; committing"
    );
    let indexed = indexing.await?;
    let docs = match (read_error, indexed) {
        (None, Ok(docs)) => docs,
        (Some(e), _) | (None, Err(e)) => {
            // Never published, so never live: remove it.
            let _ = std::fs::remove_dir_all(&generation_path);
            return Err(e);
        }
    };
    publish(&root, generation_id)?;
    bar.finish_and_clear();
    tracing::info!(
        generation = generation_id,
        docs,
        outbox_seq,
        elapsed_secs = started.elapsed().as_secs(),
        "reindex published"
    );
    Ok(Rebuilt {
        generation: generation_id,
        docs,
        outbox_seq,
    })
}
