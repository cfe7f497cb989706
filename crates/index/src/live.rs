//! The live handle: which generation searches read, swapped atomically.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use chaja_core::sources::Sources;

use crate::disk::{
    create_generation, current_generation, list_generations, make_current, named, NEXT,
};
use crate::generation::{built_for, generation_path, Generation};
use crate::Result;

/// The cloneable handle to the live generation that searches use.
#[derive(Clone)]
pub struct SearchIndex {
    root: Arc<PathBuf>,
    live: Arc<RwLock<Arc<Generation>>>,
    sources: Sources,
}

impl SearchIndex {
    /// Opens the live generation under `root`, creating an empty first one.
    pub fn open_or_create(root: &Path, sources: &Sources) -> Result<SearchIndex> {
        SearchIndex::open(root, sources, false)
    }

    /// [`SearchIndex::open_or_create`] for the server: when the live
    /// generation was built for other sources or by a version of chaja with
    /// other fields, and a rebuild for these waits in `NEXT` (`chaja
    /// reindex` after a config change or an upgrade), the rebuild is
    /// made live, since the old one cannot be read under this config at
    /// all; the indexer catches it up on the outbox from its checkpoint.
    /// Nothing else adopts it: `verify` must not move what a running
    /// server serves.
    pub fn open_for_serving(root: &Path, sources: &Sources) -> Result<SearchIndex> {
        SearchIndex::open(root, sources, true)
    }

    fn open(root: &Path, sources: &Sources, adopt: bool) -> Result<SearchIndex> {
        std::fs::create_dir_all(root)?;
        let current = match current_generation(root)? {
            // Built for other sources or in another layout, with a rebuild
            // for these waiting (see `open_for_serving`).
            Some(id) if adopt && !built_for(root, id, sources) => match named(root, NEXT)? {
                Some(next) if built_for(root, next, sources) => {
                    tracing::warn!(
                        generation = next,
                        "the live index was built for other sources or by another version of chaja; serving the rebuild, which catches up on the outbox"
                    );
                    make_current(root, next)?;
                    Some(next)
                }
                _ => Some(id),
            },
            Some(id) => Some(id),
            // Only a rebuild so far: with nothing served yet, it is as
            // good as any.
            None => match named(root, NEXT)? {
                Some(id) => {
                    make_current(root, id)?;
                    Some(id)
                }
                None => None,
            },
        };
        let generation = match current {
            Some(id) => Generation::open(root, id, sources)?,
            None => {
                let generation = create_generation(root, sources)?;
                generation.writer(1 << 26)?.commit(0)?;
                make_current(root, generation.id)?;
                generation
            }
        };
        Ok(SearchIndex {
            root: Arc::new(root.to_path_buf()),
            live: Arc::new(RwLock::new(Arc::new(generation))),
            sources: sources.clone(),
        })
    }

    /// The sources this index holds rows of.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The live generation. Cheap; hold it for the length of one request.
    pub fn live(&self) -> Arc<Generation> {
        self.live.read().expect("index lock poisoned").clone()
    }

    /// Makes `generation` the live one for all later requests. Requests that
    /// already hold the old one finish on it.
    pub fn swap(&self, generation: Arc<Generation>) {
        *self.live.write().expect("index lock poisoned") = generation;
    }

    /// The rebuilt generation `NEXT` names, when it is not the live one.
    pub fn published(&self) -> Result<Option<u64>> {
        match named(&self.root, NEXT)? {
            Some(id) if id != self.live().id => Ok(Some(id)),
            _ => Ok(None),
        }
    }

    /// Opens generation `id` under this root. Blocking.
    pub fn open_generation(&self, id: u64) -> Result<Generation> {
        Generation::open(&self.root, id, &self.sources)
    }

    /// Removes generations older than the live one.
    pub fn remove_old_generations(&self) -> Result<()> {
        let live = self.live().id;
        for id in list_generations(&self.root)? {
            if id < live {
                std::fs::remove_dir_all(generation_path(&self.root, id))?;
                tracing::info!(generation = id, "removed old index generation");
            }
        }
        Ok(())
    }
}
