//! The tantivy side: schema, tokenizers, generations on disk, writes, search.
//!
//! The index lives in generations, `ROOT/gen-<n>/`, and the file
//! `ROOT/CURRENT` names the live one. `reindex` builds the next generation
//! beside the live one and names it in `ROOT/NEXT`; the serving indexer
//! catches it up on the outbox and only then replaces `CURRENT` with it by
//! a rename, so a restart never serves a generation that has not caught
//! up, and a crash at any point leaves either the old or the new generation
//! live, never a half-built one.
//!
//! - [`schema`]: the fields (n-grams, morphemes, keys, attributes) and
//!   [`tokenizer`]: positional character n-grams of normalized text;
//!   `common_grams`: which trigrams a generation's `grams3` holds, and
//!   which 4-grams keep positions in `grams4`.
//! - [`morph`]: Korean morphology (lindera, mecab-ko-dic): building and
//!   loading the dictionary, content morphemes.
//! - `generation`: one opened generation ([`Generation`]) and its stamps;
//!   `disk`: their names on disk, publishing and the rebuild lock; `live`:
//!   the [`SearchIndex`] handle searches read, swapped atomically.
//! - `writer`: [`DocWriter`] (upserts, deletes, commits) and `checkpoint`:
//!   what a commit applied of the outbox ([`Checkpoint`]), stored in it.
//! - [`attributes`]: declared numbers and facets as columns, for ranges,
//!   sorting by an attribute and facet counts; `patches`: rows whose
//!   attributes alone changed, applied without rewriting their documents.
//! - `order`: how a segment orders its documents (by source, then newest
//!   first), which the search's early stop and counting rely on;
//!   `columns`: what every search reads of a segment, opened once a reload;
//!   `stored`: a hit's stored fields, borrowed from its document's bytes.
//! - `uid`: how a row is named (`uid` for sorting and sources, `key` for
//!   deletes).
//! - [`search`]: the engine: queries, the newest-first top-k, exact counts
//!   by source, relevance, snippets. [`warm`]: reading a generation into
//!   the page cache before the server says ready. [`Version`]: what
//!   searches see, for the answer cache.

mod attr_layout;
pub mod attributes;
mod caches;
mod checkpoint;
mod columns;
pub mod common_grams;
mod disk;
mod error;
#[cfg(feature = "faults")]
mod faults;
mod generation;
mod live;
mod merges;
pub mod morph;
mod order;
mod patches;
pub mod schema;
pub mod search;
mod stored;
pub mod tokenizer;
mod uid;
mod version;
pub mod warm;
mod writer;

#[cfg(test)]
mod tests;

pub use caches::Caches;
pub use checkpoint::{Checkpoint, GapRange};
pub use common_grams::{Fourgrams, PositionsShare, Trigrams};
pub use disk::{
    create_generation, create_generation_with_grams, make_current, publish, published_checkpoint,
    rebuild_marker, remove_unpublished, try_lock_rebuild, RebuildLock,
};
pub use error::IndexError;
pub use generation::{Generation, Indexed, View};
pub use live::SearchIndex;
pub use patches::Patches;
pub use uid::{
    for_each_live_key, key_term, parse_key_term, tag, tag_has_string_key, tag_source, uid,
};
pub use version::Version;
pub use writer::{common_grams, DocWriter, Morphemes, Pace, BODY_SEPARATOR};

pub type Result<T, E = IndexError> = std::result::Result<T, E>;
