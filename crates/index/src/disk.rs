//! Generations on disk: `ROOT/gen-<n>/`, `CURRENT` naming the live one,
//! `NEXT` a rebuild waiting to catch up, and the rebuild lock. Every name
//! is replaced by an atomic rename, so a crash leaves one of them whole.

use std::path::Path;

use tantivy::directory::MmapDirectory;
use tantivy::{Index, IndexSettings, IndexSortByField, Order};

use chaja_core::sources::Sources;

use crate::checkpoint::{read_checkpoint, Checkpoint};
use crate::common_grams::{Fourgrams, Trigrams};
use crate::generation::{
    analyzer_stamp, generation_path, generation_stamp, Generation, ANALYZER_FILE, DEFINITION_FILE,
    SOURCES_FILE,
};
use crate::schema::build_schema;
use crate::{IndexError, Result};

const CURRENT: &str = "CURRENT";
/// Names a rebuilt generation waiting to be caught up and made current.
pub(crate) const NEXT: &str = "NEXT";

/// Held while a rebuild writes a new generation: one rebuild at a time per
/// index directory, whoever starts it (the CLI, the admin endpoint, the
/// indexer itself). Two at once could pick the same generation id, or one
/// could remove the other's unpublished directory. An OS file lock, so a
/// rebuild killed with SIGKILL releases it.
#[derive(Debug)]
pub struct RebuildLock {
    _file: std::fs::File,
}

const REBUILD_LOCK: &str = "REBUILD.lock";

/// Takes the rebuild lock of `root`, or `None` while another rebuild holds
/// it. Blocking.
pub fn try_lock_rebuild(root: &Path) -> Result<Option<RebuildLock>> {
    std::fs::create_dir_all(root)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(REBUILD_LOCK))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(RebuildLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

/// Removes generations newer than the current one that `NEXT` does not
/// name: rebuilds that died before publishing. Only under the rebuild lock,
/// which proves that no rebuild is writing one.
///
/// The serving indexer may swap a published rebuild in meanwhile, and it
/// does not take the rebuild lock (a rebuild holds it for as long as it
/// scans). So the names are read in the order the swap changes them:
/// `make_current` renames `CURRENT` to the rebuild first and drops `NEXT`
/// after. Reading `NEXT` first, then `CURRENT`, every moment of a swap
/// leaves the generation going live named by one of the two reads; read
/// the other way round, a swap between them leaves it in neither, and the
/// live generation is deleted.
pub fn remove_unpublished(root: &Path, held: &RebuildLock) -> Result<()> {
    remove_unpublished_reading(root, held, || {})
}

/// [`remove_unpublished`], running `between` between its two reads: the
/// moment a test puts a swap in.
pub(crate) fn remove_unpublished_reading(
    root: &Path,
    _held: &RebuildLock,
    between: impl FnOnce(),
) -> Result<()> {
    let next = named(root, NEXT)?;
    between();
    let current = current_generation(root)?.unwrap_or(0);
    for id in list_generations(root)? {
        if id > current && Some(id) != next {
            std::fs::remove_dir_all(generation_path(root, id))?;
            tracing::info!(generation = id, "removed an unpublished index generation");
        }
    }
    Ok(())
}

/// What the published generation under `root` has applied of the outbox;
/// `None` when nothing is published. Blocking.
pub fn published_checkpoint(root: &Path) -> Result<Option<Checkpoint>> {
    let Some(id) = current_generation(root)? else {
        return Ok(None);
    };
    let index = Index::open(MmapDirectory::open(generation_path(root, id))?)?;
    Ok(Some(read_checkpoint(&index)?))
}

/// The name a rebuild of the generation at `path` holds back outbox pruning
/// under (see `db::outbox::hold_for_rebuild`): unique per index directory
/// and host (containers may all use the same path).
pub fn rebuild_marker(path: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let host = std::env::var("HOSTNAME").unwrap_or_default();
    let hash = blake3::hash(format!("{host}:{}", path.display()).as_bytes());
    format!("rebuild-{}", &hash.to_hex()[..16])
}

pub(crate) fn list_generations(root: &Path) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let name = entry?.file_name();
        if let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("gen-"))
            .and_then(|n| n.parse().ok())
        {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

pub(crate) fn current_generation(root: &Path) -> Result<Option<u64>> {
    named(root, CURRENT)
}

/// The generation the file `name` under `root` names, if it exists.
pub(crate) fn named(root: &Path, name: &str) -> Result<Option<u64>> {
    match std::fs::read_to_string(root.join(name)) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| IndexError::invalid(format!("bad {name} file: {text:?}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Creates an empty generation after the newest one on disk, whose
/// `grams3` holds every trigram and `grams4` every 4-gram.
pub fn create_generation(root: &Path, sources: &Sources) -> Result<Generation> {
    create_generation_with_grams(root, sources, &Trigrams::every(), &Fourgrams::every())
}

/// Creates an empty generation after the newest one on disk, whose
/// `grams3` holds `trigrams` and `grams4` `fourgrams` (see
/// `common_grams`): what a rebuild creates.
pub fn create_generation_with_grams(
    root: &Path,
    sources: &Sources,
    trigrams: &Trigrams,
    fourgrams: &Fourgrams,
) -> Result<Generation> {
    std::fs::create_dir_all(root)?;
    let id = list_generations(root)?.last().copied().unwrap_or(0) + 1;
    let path = generation_path(root, id);
    std::fs::create_dir(&path)?;
    let settings = IndexSettings {
        // By source, then newest first, inside every segment (see `order`).
        sort_by_field: Some(IndexSortByField {
            field: "order".to_owned(),
            order: Order::Desc,
        }),
        ..IndexSettings::default()
    };
    let index = Index::builder()
        .schema(build_schema())
        .settings(settings)
        .create_in_dir(&path)?;
    std::fs::write(path.join(ANALYZER_FILE), analyzer_stamp())?;
    std::fs::write(path.join(SOURCES_FILE), generation_stamp(sources))?;
    std::fs::write(path.join(DEFINITION_FILE), sources.definition())?;
    trigrams.save(&path)?;
    fourgrams.save(&path)?;
    Generation::from_index(id, path, index, sources)
}

/// Offers rebuilt generation `id` to the serving indexer (`NEXT`),
/// atomically, its segments sealed first (see `merges`). Blocking.
pub fn publish(root: &Path, id: u64) -> Result<()> {
    crate::merges::seal(&generation_path(root, id))?;
    name(root, NEXT, id)
}

/// Makes generation `id` the one `CURRENT` names, atomically, and drops a
/// `NEXT` that names it. Blocking.
pub fn make_current(root: &Path, id: u64) -> Result<()> {
    name(root, CURRENT, id)?;
    if named(root, NEXT)? == Some(id) {
        std::fs::remove_file(root.join(NEXT))?;
    }
    Ok(())
}

fn name(root: &Path, file: &str, id: u64) -> Result<()> {
    let tmp = root.join(format!("{file}.tmp"));
    std::fs::write(&tmp, format!("{id}\n"))?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, root.join(file))?;
    Ok(())
}
