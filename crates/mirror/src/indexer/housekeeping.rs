//! Housekeeping, every `CHAJA_HOUSEKEEPING_MS`: this replica's position in
//! `search_replicas`, pruning what every replica applied, healing
//! duplicates, and a rebuild of its own when it fell behind the prune point
//! or the outbox was rewound.

use chaja_core::sources::SourceId;
use chaja_store::outbox;

use super::round::Tail;
use super::Indexer;
use crate::{MirrorError, Result};

impl Indexer {
    /// Rows indexed more than once, to reload: that replaces every copy.
    /// Seen once after a SIGKILL during a write burst (cause not found); the
    /// scan costs one pass over a column. Reloaded first: background merges
    /// publish new segments without a commit of ours.
    pub(super) async fn duplicates(&self, live: &Tail) -> Result<Vec<(SourceId, String)>> {
        let generation = live.generation.clone();
        let scan = move || {
            generation.reload()?;
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
    pub(super) async fn housekeeping(
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
        let behind = position.low_water() < pruned;
        let reason = if rewound {
            Some("the outbox restarted below the applied position (a restored database?)")
        } else if behind {
            Some("replica fell behind the outbox retention window")
        } else {
            None
        };
        self.handle.progress.set_rewound(rewound);
        // Not ready until the rebuild is live (`swap_in` clears it), like a
        // rewind: the changes in the pruned range are gone, and the rounds
        // meanwhile read past them (their ids are gaps that settle as never
        // committed), so a later check would no longer see this replica
        // behind while its index still misses them. Housekeeping runs
        // before the first round, so a replica that starts behind never
        // claims ready on the index it has.
        if behind {
            self.handle.progress.set_behind_pruned(true);
        }
        self.handle.progress.set_checked();
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
                let options = crate::reindex::RebuildOptions {
                    writer_memory: self.config.writer_memory,
                    positions: self.config.positions,
                };
                // Beside the loop: the live generation keeps following the
                // outbox, and the rebuild is caught up before the swap.
                *rebuilding = Some(tokio::spawn(async move {
                    match crate::reindex::reindex(&db, &sources, &root, options, false).await {
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
}
