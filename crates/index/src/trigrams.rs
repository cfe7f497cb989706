//! Which trigrams the `grams3` field holds.
//!
//! A 3-character keyword is one term of `grams3`, counted from its postings
//! without visiting them (see `search::count`). Most distinct trigrams are
//! rare, though: in a 1M-row index of Korean prose, 6,415 of 181,908 are in
//! 3% of the rows or more, and the rarer ones hold 37.6% of the field's
//! postings. Each posting is a term insert when the rebuild indexes a row,
//! and a rare term's insert is the one that misses the CPU cache.
//!
//! A rare trigram's rows are found well another way: they are the rows that
//! hold a 4-gram starting with it (a range of the `grams4` term
//! dictionary, whose postings are few since the trigram is rare), and the
//! rows whose text ends with it, where no 4-gram starts. So a rebuild
//! counts the trigrams of a sample of its rows (`Trigrams::choose`) and
//! `grams3` holds only those in [`COMMON_SHARE`] of them or more, plus
//! every row's last trigram. The list is stored with the generation (the
//! file `trigrams`) and its writers and searches read it: a keyword
//! is looked up in `grams3` alone when it is common, in both fields when it
//! is rare (see `search::query`). A generation without the file (one the
//! server creates empty) holds every trigram. Which trigrams are common
//! only moves cost: the matches are the same either way.

use std::path::Path;
use std::sync::Arc;

use chaja_core::text::normalize;

use crate::Result;

/// Lists a generation's common trigrams, packed (see [`pack`]), 8 bytes
/// each, little-endian. Absent: `grams3` holds every trigram.
pub(crate) const TRIGRAMS_FILE: &str = "trigrams";

/// The share of the sampled rows a trigram must be in to be common.
/// Commoner than this, a union of its 4-grams costs more than its own
/// postings: at 1M rows, trigrams in 3% of the rows or more took 7 ms or
/// more as unions, those below p99 0.32 ms (BENCHMARKS.md, issue 28).
pub const COMMON_SHARE: f64 = 0.03;

/// How many rows a rebuild counts trigrams over.
pub const SAMPLE_ROWS: usize = 10_000;

/// Fewer rows than this say too little about which trigrams are common
/// (3% of them is 15 rows), and a table this small costs no time to
/// index: `grams3` then holds every trigram.
pub const MIN_SAMPLE_ROWS: usize = 500;

/// The trigrams `grams3` holds: every one, or the common ones (and each
/// row's last).
#[derive(Clone, Debug, Default)]
pub struct Trigrams(Option<Arc<foldhash::HashSet<u64>>>);

/// A trigram's three characters packed in a `u64`, 21 bits each: what
/// `tokenizer::distinct_grams` computes anyway while it looks for
/// repeats, and hashes faster than the trigram's bytes.
pub(crate) fn pack(chars: [char; 3]) -> u64 {
    chars
        .iter()
        .fold(0u64, |key, &c| (key << 21) | u64::from(c))
}

/// The [`pack`]ed key of `text` when it is three characters long.
fn key_of(text: &str) -> Option<u64> {
    let mut chars = text.chars();
    let three = [chars.next()?, chars.next()?, chars.next()?];
    chars.next().is_none().then(|| pack(three))
}

impl Trigrams {
    /// `grams3` holds every trigram.
    pub fn every() -> Trigrams {
        Trigrams(None)
    }

    /// `grams3` holds these trigrams (of normalized text) and each row's
    /// last one; anything not three characters long is left out.
    pub fn only<'a>(trigrams: impl IntoIterator<Item = &'a str>) -> Trigrams {
        let keys = trigrams.into_iter().filter_map(key_of);
        Trigrams(Some(Arc::new(keys.collect())))
    }

    /// The trigrams in [`COMMON_SHARE`] of the sampled rows or more, given
    /// the text each row's grams are cut from (see `writer`); every
    /// trigram when the sample has fewer than [`MIN_SAMPLE_ROWS`] rows.
    pub(crate) fn choose(sample: &[String]) -> Trigrams {
        if sample.len() < MIN_SAMPLE_ROWS {
            return Trigrams::every();
        }
        let mut rows: foldhash::HashMap<u64, u32> = Default::default();
        let mut in_row: foldhash::HashSet<u64> = Default::default();
        for text in sample {
            in_row.clear();
            let chars: Vec<char> = normalize(text).chars().collect();
            for three in chars.windows(3) {
                let key = pack([three[0], three[1], three[2]]);
                if in_row.insert(key) {
                    *rows.entry(key).or_default() += 1;
                }
            }
        }
        let least = (sample.len() as f64 * COMMON_SHARE).ceil() as u32;
        rows.retain(|_, n| *n >= least);
        Trigrams(Some(Arc::new(rows.into_keys().collect())))
    }

    /// Whether `grams3` holds every row that contains the trigram `key`.
    pub(crate) fn holds_key(&self, key: u64) -> bool {
        self.0.as_ref().is_none_or(|common| common.contains(&key))
    }

    /// Whether `grams3` holds every row that contains `keyword`, a
    /// normalized keyword of three characters.
    pub fn holds(&self, keyword: &str) -> bool {
        key_of(keyword).is_some_and(|key| self.holds_key(key))
    }

    /// How many trigrams are common; `None` when `grams3` holds every one.
    pub fn common(&self) -> Option<usize> {
        self.0.as_ref().map(|common| common.len())
    }

    /// Reads the list of the generation in `dir`. Blocking.
    pub(crate) fn load(dir: &Path) -> Result<Trigrams> {
        let bytes = match std::fs::read(dir.join(TRIGRAMS_FILE)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Trigrams::every()),
            Err(e) => return Err(e.into()),
        };
        if bytes.len() % 8 != 0 {
            return Err(crate::IndexError::invalid(format!(
                "{} is {} bytes, not a list of 8-byte trigrams: run `chaja reindex` to rebuild the index",
                dir.join(TRIGRAMS_FILE).display(),
                bytes.len()
            )));
        }
        let keys = bytes
            .chunks_exact(8)
            .map(|k| u64::from_le_bytes(k.try_into().expect("8 bytes")));
        Ok(Trigrams(Some(Arc::new(keys.collect()))))
    }

    /// Writes the list into the generation in `dir`, before anything is
    /// indexed there; nothing when every trigram is held. Blocking.
    pub(crate) fn save(&self, dir: &Path) -> Result<()> {
        let Some(common) = &self.0 else {
            return Ok(());
        };
        let mut keys: Vec<u64> = common.iter().copied().collect();
        keys.sort_unstable();
        let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        std::fs::write(dir.join(TRIGRAMS_FILE), bytes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_trigrams_are_those_in_enough_sampled_rows() {
        // `있습니` in every row; `드문말` in 1% of them (below 3%), five
        // times in each, which counts once per row; `가끔씩` in 5%.
        let sample: Vec<String> = (0..1000)
            .map(|i| {
                let mut body = String::from("있습니다");
                if i % 100 == 0 {
                    body.push_str(&" 드문말".repeat(5));
                }
                if i % 20 == 0 {
                    body.push_str(" 가끔씩 가끔씩 가끔씩");
                }
                body
            })
            .collect();
        let chosen = Trigrams::choose(&sample);
        assert!(chosen.holds("있습니"));
        assert!(chosen.holds("가끔씩"));
        assert!(!chosen.holds("드문말"));
        assert!(!chosen.holds("없는말"));
        // Too small a sample: every trigram.
        let few = Trigrams::choose(&sample[..MIN_SAMPLE_ROWS - 1]);
        assert_eq!(few.common(), None);
        assert!(few.holds("드문말"));
    }

    #[test]
    fn the_list_is_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Trigrams::load(dir.path()).unwrap().common(), None);
        let only = Trigrams::only(["있습니", "😀ab", "too long", "ab"]);
        assert_eq!(only.common(), Some(2));
        only.save(dir.path()).unwrap();
        let read = Trigrams::load(dir.path()).unwrap();
        assert_eq!(read.common(), Some(2));
        assert!(read.holds("있습니") && read.holds("😀ab") && !read.holds("습니다"));
        std::fs::write(dir.path().join(TRIGRAMS_FILE), [1, 2, 3]).unwrap();
        assert!(Trigrams::load(dir.path()).is_err());
    }
}
