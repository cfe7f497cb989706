//! The generations the indexer tails: opening one (the live one, or a
//! rebuild to catch up) and swapping a caught-up rebuild in.

use std::sync::Arc;
use std::time::Instant;

use chaja_index::Generation;
use chaja_store::outbox;

use super::position::Position;
use super::round::{close, Tail};
use super::Indexer;
use crate::Result;

impl Indexer {
    pub(super) async fn open_candidate(&self, id: u64) -> Result<Tail> {
        let index = self.index.clone();
        let generation = tokio::task::spawn_blocking(move || {
            let generation = index.open_generation(id)?;
            // Its arrays, before it is swapped in (see `Generation::prime`).
            generation.prime()?;
            Ok::<_, chaja_index::IndexError>(generation)
        })
        .await??;
        self.open_tail(Arc::new(generation)).await
    }

    pub(super) async fn open_tail(&self, generation: Arc<Generation>) -> Result<Tail> {
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
            fold: Default::default(),
            stale: false,
        })
    }

    /// Makes a caught-up generation the live one.
    pub(super) async fn swap_in(&self, live: &Tail, old: Tail) {
        self.index.swap(live.generation.clone());
        let progress = &self.handle.progress;
        progress.committed_up_to(live.position.committed, live.position.high);
        progress.changed();
        progress.set_rewound(false);
        progress.set_behind_pruned(false);
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
}
