//! Character n-gram tokenizers with real positions, and the texts they
//! are handed.
//!
//! tantivy's `NgramTokenizer` gives every gram position 0, so a phrase query
//! over its grams cannot check adjacency. [`GramTokenizer`] emits the grams
//! of normalized text with `position = character index`: a slop-0 phrase of
//! a keyword's 4-grams then matches exactly where the keyword is a
//! substring. Spaces and punctuation are kept in the grams, as `LIKE` keeps
//! them.
//!
//! tantivy runs a field's tokenizer on its indexing thread, the one thread
//! a rebuild (and the indexer) waits for. So what can be done before is:
//! [`GramTexts`] normalizes a row once and finds its distinct short grams
//! on the analysis thread, beside its morphemes, and the indexing thread
//! only cuts them out.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use chaja_core::text::normalize;

/// What a row's gram fields are given: its text normalized (for the
/// positional 4-grams), and for 1, 2 and 3 characters each distinct gram
/// once, back to back (for the fields that keep doc ids only: a repeat
/// changes nothing there but costs tantivy a hash lookup, and in a row of
/// Korean prose most characters and many bigrams are repeats).
#[derive(Debug, Default)]
pub struct GramTexts {
    pub(crate) normalized: String,
    /// `distinct[n - 1]`: the distinct grams of `n` characters, in the
    /// order they first occur, for [`SplitTokenizer`] to cut.
    pub(crate) distinct: [String; 3],
}

impl GramTexts {
    pub fn of(text: &str) -> GramTexts {
        let normalized = normalize(text);
        let chars: Vec<char> = normalized.chars().collect();
        // A gram of up to three characters is one number (21 bits a
        // character): hashing and comparing those is several times
        // cheaper than hashing and comparing their text.
        let mut seen: [foldhash::HashSet<u64>; 3] = Default::default();
        let mut distinct: [String; 3] = Default::default();
        for (n, (seen, out)) in seen.iter_mut().zip(&mut distinct).enumerate() {
            let grams = (chars.len() + 1).saturating_sub(n + 1);
            seen.reserve(grams);
            out.reserve(grams * (n + 1) * 3);
            for gram in chars.windows(n + 1) {
                let key = gram.iter().fold(0u64, |key, &c| key << 21 | u64::from(c));
                if seen.insert(key) {
                    out.extend(gram);
                }
            }
        }
        GramTexts {
            normalized,
            distinct,
        }
    }
}

/// The byte offset of every character of `text`, and `text.len()`.
fn char_bounds(text: &str) -> Vec<usize> {
    let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    bounds.push(text.len());
    bounds
}

/// Overlapping grams of `n` characters of text already normalized (see
/// [`GramTexts`]), each occurrence at its character index.
#[derive(Clone, Debug)]
pub struct GramTokenizer {
    n: usize,
}

impl GramTokenizer {
    /// The positional grams of the `grams4` field.
    pub fn fourgram() -> Self {
        GramTokenizer { n: 4 }
    }
}

pub struct GramStream<'a> {
    text: &'a str,
    /// Byte offset of every character, plus `text.len()` at the end.
    bounds: Vec<usize>,
    n: usize,
    next: usize,
    token: Token,
}

impl Tokenizer for GramTokenizer {
    type TokenStream<'a> = GramStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> GramStream<'a> {
        GramStream {
            text,
            bounds: char_bounds(text),
            n: self.n,
            next: 0,
            token: Token::default(),
        }
    }
}

impl TokenStream for GramStream<'_> {
    fn advance(&mut self) -> bool {
        let pos = self.next;
        if pos + self.n >= self.bounds.len() {
            return false;
        }
        let (from, to) = (self.bounds[pos], self.bounds[pos + self.n]);
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = pos;
        self.token.position_length = 1;
        self.next += 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// Cuts text made of grams of `n` characters back to back (see
/// [`GramTexts`]) into those grams, for the fields that keep doc ids only
/// (their positions are not stored).
#[derive(Clone, Debug)]
pub struct SplitTokenizer {
    n: usize,
}

impl SplitTokenizer {
    pub fn new(n: usize) -> Self {
        SplitTokenizer { n }
    }
}

pub struct SplitStream<'a> {
    chars: std::str::CharIndices<'a>,
    text: &'a str,
    n: usize,
    token: Token,
}

impl Tokenizer for SplitTokenizer {
    type TokenStream<'a> = SplitStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> SplitStream<'a> {
        SplitStream {
            chars: text.char_indices(),
            text,
            n: self.n,
            token: Token::default(),
        }
    }
}

impl TokenStream for SplitStream<'_> {
    fn advance(&mut self) -> bool {
        let Some((from, first)) = self.chars.next() else {
            return false;
        };
        let mut to = from + first.len_utf8();
        // A short gram at the end would come from a text `GramTexts` did
        // not make: it is indexed as it is, and no query reads it.
        for (at, c) in self.chars.by_ref().take(self.n - 1) {
            to = at + c.len_utf8();
        }
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        // tantivy's tokens start at `usize::MAX`, as its own tokenizers
        // count: the first is at 0.
        self.token.position = self.token.position.wrapping_add(1);
        self.token.position_length = 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// The fewest 4-grams of a normalized keyword (5+ characters) that still
/// pin every character, with their offsets: 0, 4, 8, … and the last one.
/// A slop-0 phrase of them matches exactly where the keyword occurs, and
/// fewer terms mean fewer positions to check.
pub fn fourgram_cover(keyword: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = keyword.chars().collect();
    debug_assert!(chars.len() >= 4);
    let last = chars.len() - 4;
    let mut offsets: Vec<usize> = (0..=last).step_by(4).collect();
    if offsets.last() != Some(&last) {
        offsets.push(last);
    }
    offsets
        .into_iter()
        .map(|i| (i, chars[i..i + 4].iter().collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fourgram_cover_pins_every_character_with_few_terms() {
        let offsets = |k: &str| {
            fourgram_cover(k)
                .into_iter()
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        assert_eq!(offsets("abcd"), [0]);
        assert_eq!(offsets("abcde"), [0, 1]);
        assert_eq!(offsets("abcdefgh"), [0, 4]);
        assert_eq!(offsets("abcdefghi"), [0, 4, 5]);
        assert_eq!(fourgram_cover("있습니다만")[1].1, "습니다만");
    }

    fn tokens<T: Tokenizer>(mut t: T, text: &str) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut s = t.token_stream(text);
        while s.advance() {
            out.push((s.token().text.clone(), s.token().position));
        }
        out
    }

    fn short_grams(text: &str, n: usize) -> Vec<String> {
        let texts = GramTexts::of(text);
        tokens(SplitTokenizer::new(n), &texts.distinct[n - 1])
            .into_iter()
            .map(|(gram, _)| gram)
            .collect()
    }

    #[test]
    fn fourgrams_have_increasing_positions_and_keep_spaces() {
        let texts = GramTexts::of("스프링 Boot");
        assert_eq!(texts.normalized, "스프링 boot");
        assert_eq!(
            tokens(GramTokenizer::fourgram(), &texts.normalized),
            [
                ("스프링 ".into(), 0),
                ("프링 b".into(), 1),
                ("링 bo".into(), 2),
                (" boo".into(), 3),
                ("boot".into(), 4)
            ]
        );
        assert!(tokens(GramTokenizer::fourgram(), "가나다").is_empty());
        assert_eq!(tokens(GramTokenizer::fourgram(), "abcabcabc").len(), 6);
    }

    #[test]
    fn short_grams_are_normalized_and_come_once() {
        assert_eq!(
            short_grams("가나가나 가나", 2),
            ["가나", "나가", "나 ", " 가"]
        );
        assert_eq!(short_grams("aAa", 1), ["a"]);
        assert_eq!(short_grams("abcabc", 3), ["abc", "bca", "cab"]);
        assert_eq!(short_grams("스프링 Boot", 2).len(), 7);
        assert!(short_grams("가", 2).is_empty());
        assert!(short_grams("", 1).is_empty());
        // The title and body separator is a character like any other.
        assert_eq!(short_grams("가\u{0}나", 2), ["가\u{0}", "\u{0}나"]);
    }
}
