//! Which trigrams the `grams3` field holds, and which 4-grams keep their
//! positions in `grams4`.
//!
//! **Trigrams.** A 3-character keyword is one term of `grams3`, counted
//! from its postings without visiting them (see `search::count`). Most
//! distinct trigrams are rare, though: in a 1M-row index of Korean prose,
//! 6,415 of 181,908 are in 3% of the rows or more, and the rarer ones hold
//! 37.6% of the field's postings. Each posting is a term insert when the
//! rebuild indexes a row, and a rare term's insert is the one that misses
//! the CPU cache.
//!
//! A rare trigram's rows are found well another way: they are the rows that
//! hold a 4-gram starting with it (a range of the 4-gram term
//! dictionaries, whose postings are few since the trigram is rare), and the
//! rows whose text ends with it, where no 4-gram starts. So a rebuild
//! counts the trigrams of a sample of its rows ([`Trigrams::choose`]) and
//! `grams3` holds only those in [`COMMON_SHARE`] of them or more, plus
//! every row's last trigram.
//!
//! **4-grams.** Every 4-gram of a row is indexed, but positions are the
//! largest part of an index (30% at 100k rows, 2026-12-03), and they are
//! what a keyword of five or more characters reads only to check that its
//! 4-grams are adjacent. A rebuild may keep positions only for the 4-grams
//! in a share of the sampled rows ([`Fourgrams::choose`]): those stay in
//! `grams4` with their positions, and the rarer ones go to `grams4_rare`,
//! doc ids only. A long keyword whose characters common 4-grams pin is
//! still a phrase; another is the rows holding all its 4-grams, each
//! checked against its stored text (see `search::checked`). The share is
//! where size is traded for latency; by default every 4-gram keeps its
//! positions.
//!
//! Each list is stored with the generation (the files `trigrams` and
//! `fourgrams`), and its writers and searches read it. A generation without
//! a file (one the server creates empty) holds every gram in the first
//! field. Which grams are common only moves cost: the matches are the same
//! either way.

use std::path::Path;
use std::sync::Arc;

use chaja_core::text::normalize;

use crate::Result;

/// The share of the sampled rows a trigram must be in to be common.
/// Commoner than this, a union of its 4-grams costs more than its own
/// postings (docs/benchmarks/044-every-target-and-gram-field-costs.md).
pub const COMMON_SHARE: f64 = 0.03;

/// How many rows a rebuild counts grams over.
pub const SAMPLE_ROWS: usize = 10_000;

/// Fewer rows than this say too little about which grams are common (3%
/// of them is 15 rows), and a table this small costs no time to index:
/// the first field then holds every gram.
pub const MIN_SAMPLE_ROWS: usize = 500;

/// The share of a rebuild's sampled rows a 4-gram must be in to keep its
/// positions in `grams4`; 0, the default, keeps every 4-gram's. Above 0,
/// the index is smaller and a long keyword with a rarer 4-gram is checked
/// against its candidates' text: size traded for latency
/// (docs/benchmarks/047-fourgrams-without-positions.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PositionsShare(f64);

impl PositionsShare {
    /// Every 4-gram keeps its positions.
    pub const EVERY: PositionsShare = PositionsShare(0.0);

    /// A share from 0 to 1.
    pub fn new(share: f64) -> std::result::Result<PositionsShare, String> {
        match (0.0..=1.0).contains(&share) {
            true => Ok(PositionsShare(share)),
            false => Err(format!("{share} is not a share from 0 to 1")),
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl std::str::FromStr for PositionsShare {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<PositionsShare, String> {
        let share: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a number"))?;
        PositionsShare::new(share)
    }
}

/// The grams of `N` characters a generation holds in their first field
/// (`grams3`, `grams4`): every one, or the common ones.
#[derive(Clone, Debug, Default)]
pub struct Common<const N: usize>(Option<Arc<foldhash::HashSet<u128>>>);

/// The trigrams `grams3` holds: every one, or the common ones (and each
/// row's last).
pub type Trigrams = Common<3>;

/// The 4-grams `grams4` holds with their positions: every one, or the
/// common ones; the others are in `grams4_rare`.
pub type Fourgrams = Common<4>;

/// Characters packed in a `u128`, 21 bits each: what
/// `tokenizer::distinct_grams` computes anyway while it looks for
/// repeats, and hashes faster than the gram's bytes.
pub(crate) fn pack(chars: &[char]) -> u128 {
    chars
        .iter()
        .fold(0u128, |key, &c| (key << 21) | u128::from(u32::from(c)))
}

impl<const N: usize> Common<N> {
    /// The file that lists a generation's common grams, [`pack`]ed, 16
    /// bytes each, little-endian. Absent: the first field holds every gram.
    pub(crate) const FILE: &'static str = match N {
        3 => "trigrams",
        4 => "fourgrams",
        _ => panic!("only trigrams and 4-grams are listed"),
    };

    /// The [`pack`]ed key of `text` when it is `N` characters long.
    fn key_of(text: &str) -> Option<u128> {
        let chars: Vec<char> = text.chars().collect();
        (chars.len() == N).then(|| pack(&chars))
    }

    /// The first field holds every gram.
    pub fn every() -> Self {
        Common(None)
    }

    /// The first field holds these grams (of normalized text); anything not
    /// `N` characters long is left out.
    pub fn only<'a>(grams: impl IntoIterator<Item = &'a str>) -> Self {
        let keys = grams.into_iter().filter_map(Self::key_of);
        Common(Some(Arc::new(keys.collect())))
    }

    /// The grams in `share` of the sampled rows or more, given the text
    /// each row's grams are cut from (see `writer`); every gram when the
    /// sample has fewer than [`MIN_SAMPLE_ROWS`] rows or `share` is 0.
    pub(crate) fn choose(sample: &[String], share: f64) -> Self {
        if sample.len() < MIN_SAMPLE_ROWS || share <= 0.0 {
            return Common::every();
        }
        let mut rows: foldhash::HashMap<u128, u32> = Default::default();
        let mut in_row: foldhash::HashSet<u128> = Default::default();
        for text in sample {
            in_row.clear();
            let chars: Vec<char> = normalize(text).chars().collect();
            for gram in chars.windows(N) {
                let key = pack(gram);
                if in_row.insert(key) {
                    *rows.entry(key).or_default() += 1;
                }
            }
        }
        let least = (sample.len() as f64 * share).ceil() as u32;
        rows.retain(|_, n| *n >= least);
        Common(Some(Arc::new(rows.into_keys().collect())))
    }

    /// Whether the first field holds the gram `key`.
    pub(crate) fn holds_key(&self, key: u128) -> bool {
        self.0.as_ref().is_none_or(|common| common.contains(&key))
    }

    /// Whether the first field holds `gram`, a normalized gram of `N`
    /// characters.
    pub fn holds(&self, gram: &str) -> bool {
        Self::key_of(gram).is_some_and(|key| self.holds_key(key))
    }

    /// Whether the first field holds every gram.
    pub fn holds_every(&self) -> bool {
        self.0.is_none()
    }

    /// How many grams are common; `None` when the first field holds every
    /// one.
    pub fn common(&self) -> Option<usize> {
        self.0.as_ref().map(|common| common.len())
    }

    /// Reads the list of the generation in `dir`. Blocking.
    pub(crate) fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(Self::FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Common::every()),
            Err(e) => return Err(e.into()),
        };
        if bytes.len() % 16 != 0 {
            return Err(crate::IndexError::invalid(format!(
                "{} is {} bytes, not a list of 16-byte grams: run `chaja reindex` to rebuild the index",
                path.display(),
                bytes.len()
            )));
        }
        let keys = bytes
            .chunks_exact(16)
            .map(|k| u128::from_le_bytes(k.try_into().expect("16 bytes")));
        Ok(Common(Some(Arc::new(keys.collect()))))
    }

    /// Writes the list into the generation in `dir`, before anything is
    /// indexed there; nothing when every gram is held. Blocking.
    pub(crate) fn save(&self, dir: &Path) -> Result<()> {
        let Some(common) = &self.0 else {
            return Ok(());
        };
        let mut keys: Vec<u128> = common.iter().copied().collect();
        keys.sort_unstable();
        let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        std::fs::write(dir.join(Self::FILE), bytes)?;
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
        let chosen = Trigrams::choose(&sample, COMMON_SHARE);
        assert!(chosen.holds("있습니"));
        assert!(chosen.holds("가끔씩"));
        assert!(!chosen.holds("드문말"));
        assert!(!chosen.holds("없는말"));
        // Too small a sample: every trigram.
        let few = Trigrams::choose(&sample[..MIN_SAMPLE_ROWS - 1], COMMON_SHARE);
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
        std::fs::write(dir.path().join(Trigrams::FILE), [1, 2, 3]).unwrap();
        assert!(Trigrams::load(dir.path()).is_err());
    }

    #[test]
    fn fourgrams_are_chosen_by_share_and_read_back_from_their_own_file() {
        let sample: Vec<String> = (0..1000)
            .map(|i| match i % 50 {
                0 => "있습니다 드문말이".to_owned(),
                _ => "있습니다".to_owned(),
            })
            .collect();
        let every = Fourgrams::choose(&sample, 0.0);
        assert!(every.holds_every() && every.holds("드문말이"));
        let chosen = Fourgrams::choose(&sample, 0.03);
        assert!(chosen.holds("있습니다") && !chosen.holds("드문말이"));
        assert!(Fourgrams::choose(&sample, 0.01).holds("드문말이"));
        let dir = tempfile::tempdir().unwrap();
        chosen.save(dir.path()).unwrap();
        assert!(dir.path().join("fourgrams").exists());
        assert_eq!(Trigrams::load(dir.path()).unwrap().common(), None);
        let read = Fourgrams::load(dir.path()).unwrap();
        assert_eq!(read.common(), chosen.common());
        assert!(read.holds("있습니다") && !read.holds("드문말이"));
    }
}
