//! A document's `uid` and `key`: how a row is named in the index.
//!
//! `uid` is a fast `u64`: the source in its low bits, a string-key flag,
//! then the integer key or a hash of the string key. It is the sort
//! tiebreak of equal `created_at`s and tells a match's source without
//! reading its stored fields. `key` is the text `<source position>:<key>`:
//! the term a delete names, and what `verify` reads back.

use chaja_core::model::Key;
use chaja_core::sources::{SourceId, MAX_SOURCES};

/// Bits of a `uid` that hold the source; the next one says the key is a
/// string.
const SOURCE_BITS: u32 = 4;
const STRING_KEY: u64 = 1 << SOURCE_BITS;

/// The sort tiebreak and source of a row (see `Fields::uid`).
pub fn uid(source: SourceId, key: &Key) -> u64 {
    let source = source.index() as u64;
    match key {
        Key::Int(i) => ((*i as u64) << (SOURCE_BITS + 1)) | source,
        Key::Str(s) => {
            let hash = blake3::hash(s.as_bytes());
            let high = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"));
            (high << (SOURCE_BITS + 1)) | STRING_KEY | source
        }
    }
}

/// The source a `uid` belongs to.
pub fn uid_source(uid: u64) -> usize {
    (uid & (MAX_SOURCES as u64 - 1)) as usize
}

/// Whether the `uid` is of a string key.
pub fn uid_has_string_key(uid: u64) -> bool {
    uid & STRING_KEY != 0
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
