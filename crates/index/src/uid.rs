//! A document's `uid` and `key`: how a row is named in the index.
//!
//! `uid` and `tag` are fast `u64`s: the integer key (or a string key's
//! hash), and the source with a string-key flag (and more of the hash).
//! Together they are the sort tiebreak of equal `created_at`s, unique per
//! row, and `tag` tells a match's source without reading its stored
//! fields. `key` is the text `<source position>:<key>`:
//! the term a delete names, and what `verify` reads back.

use chaja_core::model::Key;
use chaja_core::sources::{SourceId, MAX_SOURCES};

/// Bits of a `tag` that hold the source; the next one says the key is a
/// string.
const SOURCE_BITS: u32 = 4;
const STRING_KEY: u64 = 1 << SOURCE_BITS;

/// The first half of a row's tiebreak (see `Fields::uid`): an integer key
/// whole, its sign bit flipped so that `u64` order is key order; a string
/// key's first 64 bits of BLAKE3.
pub fn uid(key: &Key) -> u64 {
    match key {
        Key::Int(i) => (*i as u64) ^ (1 << 63),
        Key::Str(s) => hash_word(s, 0),
    }
}

/// The second half (see `Fields::tag`): the source in the low 4 bits, bit
/// 4 for a string key, and above them 59 more bits of a string key's hash.
/// With `uid`, no two rows of a source share a tiebreak (string keys: by
/// 123 bits of a hash).
pub fn tag(source: SourceId, key: &Key) -> u64 {
    let source = source.index() as u64;
    match key {
        Key::Int(_) => source,
        Key::Str(s) => (hash_word(s, 1) << (SOURCE_BITS + 1)) | STRING_KEY | source,
    }
}

/// Word `i` (0 or 1) of the BLAKE3 hash of `text`.
fn hash_word(text: &str, i: usize) -> u64 {
    let hash = blake3::hash(text.as_bytes());
    let bytes = &hash.as_bytes()[i * 8..i * 8 + 8];
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// The source a `tag` belongs to.
pub fn tag_source(tag: u64) -> usize {
    (tag & (MAX_SOURCES as u64 - 1)) as usize
}

/// Whether the `tag` is of a string key.
pub fn tag_has_string_key(tag: u64) -> bool {
    tag & STRING_KEY != 0
}

/// The `key` term of a row: `<source position>:<key text>`.
pub fn key_term(source: SourceId, key_text: &str) -> String {
    format!("{}:{key_text}", source.index())
}

/// The source and key text of a `key` term.
pub fn parse_key_term(term: &str) -> Option<(SourceId, &str)> {
    let (source, key) = term.split_once(':')?;
    let source: usize = source.parse().ok()?;
    (source < MAX_SOURCES).then(|| (SourceId::from_index(source), key))
}

/// Calls `f` with every live document of `segment` and its `key`. The
/// column's dictionary is streamed once, in order: looking each document's
/// key up by itself decompresses a dictionary block per document, which
/// made a scan of 100k rows take seconds of CPU.
pub fn for_each_live_key(
    segment: &tantivy::SegmentReader,
    mut f: impl FnMut(tantivy::DocId, &str),
) -> crate::Result<()> {
    let Some(keys) = segment.fast_fields().str("key")? else {
        return Ok(());
    };
    let mut terms: Vec<String> = Vec::with_capacity(keys.num_terms());
    let mut stream = keys.dictionary().stream()?;
    while stream.advance() {
        terms.push(String::from_utf8_lossy(stream.key()).into_owned());
    }
    for doc in segment.doc_ids_alive() {
        if let Some(term) = keys
            .term_ords(doc)
            .next()
            .and_then(|ord| terms.get(ord as usize))
        {
            f(doc, term);
        }
    }
    Ok(())
}
