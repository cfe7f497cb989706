//! Character n-grams: positional 4-grams, and each distinct shorter gram
//! (and rare 4-gram) once.
//!
//! tantivy's `NgramTokenizer` gives every gram position 0, so a phrase query
//! over its grams cannot check adjacency. [`GramTokenizer`] emits the
//! 4-grams of the normalized text with `position = character index`: a
//! slop-0 phrase of a keyword's 4-grams then matches exactly where the
//! keyword is a substring. It emits only the 4-grams the generation keeps
//! positions for (see `common_grams`). The fields of 1, 2 and 3
//! characters, and the rare 4-grams, keep doc ids only, so they get each
//! gram of a row once ([`distinct_grams`], cut by [`ChunkTokenizer`]).
//! Spaces and punctuation are kept in the grams, as `LIKE` keeps them.

use std::cell::RefCell;

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use chaja_core::text::normalize;

use crate::common_grams::{pack, Fourgrams, Trigrams};

/// Overlapping grams of `n` characters of [`normalize`]d text, every
/// occurrence at its character index: the positional 4-grams, only those
/// `kept` holds.
#[derive(Clone, Debug)]
pub struct GramTokenizer {
    n: usize,
    kept: Fourgrams,
}

impl GramTokenizer {
    pub fn new(n: usize) -> Self {
        GramTokenizer {
            n,
            kept: Fourgrams::every(),
        }
    }

    /// The 4-grams `kept` holds, at their positions.
    pub fn fourgram(kept: Fourgrams) -> Self {
        GramTokenizer { n: 4, kept }
    }
}

pub struct GramStream {
    text: String,
    /// Every character, when only some 4-grams are emitted: their keys.
    chars: Vec<char>,
    kept: Fourgrams,
    /// Byte offset of every character, plus `text.len()` at the end.
    bounds: Vec<usize>,
    n: usize,
    next: usize,
    token: Token,
}

impl Tokenizer for GramTokenizer {
    type TokenStream<'a> = GramStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> GramStream {
        let text = normalize(text);
        let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        bounds.push(text.len());
        let chars = match self.kept.holds_every() {
            true => Vec::new(),
            false => text.chars().collect(),
        };
        GramStream {
            text,
            chars,
            kept: self.kept.clone(),
            bounds,
            n: self.n,
            next: 0,
            token: Token::default(),
        }
    }
}

impl TokenStream for GramStream {
    fn advance(&mut self) -> bool {
        let mut pos = self.next;
        if !self.chars.is_empty() {
            while pos + self.n < self.bounds.len()
                && !self.kept.holds_key(pack(&self.chars[pos..pos + self.n]))
            {
                pos += 1;
            }
        }
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
        self.next = pos + 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// The distinct 1-, 2- and 3-character grams of normalized `text`, and its
/// rare 4-grams, each once and back to back, in the order they first
/// occur: what the doc-id-only fields (`chars`, `grams2`, `grams3`,
/// `grams4_rare`) index, cut again by a [`ChunkTokenizer`]. Of the
/// trigrams, only those `trigrams` holds, and the last one of the text; of
/// the 4-grams, those `fourgrams` does not hold (see `common_grams`).
///
/// The writer calls this before a document goes to tantivy, so the work
/// runs on the thread that feeds tantivy, not on tantivy's indexing thread,
/// which a rebuild waits on. Each gram is found once: a repeat changes
/// nothing in a doc-id-only field but costs tantivy a hash lookup, and in
/// a row of Korean prose most characters and many bigrams are repeats. A
/// gram is looked up here by its characters packed in a `u128` (21 bits
/// each), which hashes faster than its bytes.
pub fn distinct_grams(text: &str, trigrams: &Trigrams, fourgrams: &Fourgrams) -> [String; 4] {
    thread_local! {
        /// Kept between rows so that a row does not allocate them again;
        /// dropped after a row long enough to grow them past `KEPT`, so a
        /// huge row does not pin its memory on the thread.
        static SEEN: RefCell<[foldhash::HashSet<u128>; 4]> = RefCell::default();
    }
    const KEPT: usize = 1 << 16;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end = |i: usize| chars.get(i).map_or(text.len(), |&(at, _)| at);
    let mut out: [String; 4] = Default::default();
    // Only rare 4-grams are written here, and none when all are common.
    let sizes = if fourgrams.holds_every() { 3 } else { 4 };
    SEEN.with_borrow_mut(|seen| {
        for set in seen.iter_mut() {
            set.clear();
        }
        for (i, &(from, _)) in chars.iter().enumerate() {
            let mut key = 0u128;
            for (n, (set, grams)) in seen.iter_mut().zip(&mut out).take(sizes).enumerate() {
                let Some(&(_, c)) = chars.get(i + n) else {
                    break;
                };
                key = (key << 21) | u128::from(u32::from(c));
                let held = match n {
                    0 | 1 => true,
                    2 => trigrams.holds_key(key),
                    _ => !fourgrams.holds_key(key),
                };
                if held && set.insert(key) {
                    grams.push_str(&text[from..end(i + n + 1)]);
                }
            }
        }
        // No 4-gram starts at the last trigram, so `grams3` holds it
        // whether or not it is common.
        if let [.., (from, a), (_, b), (_, c)] = chars[..] {
            if !trigrams.holds_key(pack(&[a, b, c])) {
                out[2].push_str(&text[from..]);
            }
        }
        for set in seen.iter_mut() {
            if set.capacity() > KEPT {
                *set = Default::default();
            }
        }
    });
    out
}

/// Cuts text into consecutive grams of `n` characters: `abcdef` gives
/// `ab`, `cd`, `ef` for `n = 2`. It reads what [`distinct_grams`] wrote,
/// so it neither normalizes nor looks for repeats; a partial gram at the
/// end is dropped.
#[derive(Clone, Debug)]
pub struct ChunkTokenizer {
    n: usize,
}

impl ChunkTokenizer {
    pub fn new(n: usize) -> Self {
        ChunkTokenizer { n }
    }
}

pub struct ChunkStream<'a> {
    rest: &'a str,
    offset: usize,
    n: usize,
    token: Token,
}

impl Tokenizer for ChunkTokenizer {
    type TokenStream<'a> = ChunkStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ChunkStream<'a> {
        ChunkStream {
            rest: text,
            offset: 0,
            n: self.n,
            token: Token::default(),
        }
    }
}

impl TokenStream for ChunkStream<'_> {
    fn advance(&mut self) -> bool {
        // The byte offset after `n` characters, if there are `n`.
        let Some(len) = self
            .rest
            .char_indices()
            .map(|(i, _)| i)
            .chain([self.rest.len()])
            .nth(self.n)
        else {
            return false;
        };
        let (gram, rest) = self.rest.split_at(len);
        self.token.text.clear();
        self.token.text.push_str(gram);
        self.token.offset_from = self.offset;
        self.token.offset_to = self.offset + len;
        self.token.position = self.offset;
        self.token.position_length = 1;
        self.rest = rest;
        self.offset += len;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// The fewest 4-grams of a normalized keyword (5+ characters) that pin
/// every character, with their offsets, among those `held` says have
/// positions; `None` when some character is in no such 4-gram. A slop-0
/// phrase of them matches exactly where the keyword occurs, and fewer
/// terms mean fewer positions to check. Greedy: each next 4-gram is the
/// furthest one that still touches the first character not yet pinned,
/// which covers an interval with the fewest; with every 4-gram held, that
/// is offsets 0, 4, 8, … and the last one.
pub fn held_cover(keyword: &str, held: impl Fn(&str) -> bool) -> Option<Vec<(usize, String)>> {
    let chars: Vec<char> = keyword.chars().collect();
    let last = chars.len().checked_sub(4)?;
    let gram = |i: usize| chars[i..i + 4].iter().collect::<String>();
    let mut cover = Vec::new();
    // Every character before `pinned` is in a chosen 4-gram.
    let mut pinned = 0;
    while pinned < chars.len() {
        let (from, to) = (pinned.saturating_sub(3), pinned.min(last));
        let i = (from..=to).rev().find(|&i| held(&gram(i)))?;
        cover.push((i, gram(i)));
        pinned = i + 4;
    }
    Some(cover)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cover_of_every_4gram_pins_every_character_with_few_terms() {
        let offsets = |k: &str| {
            held_cover(k, |_| true)
                .unwrap()
                .into_iter()
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        assert_eq!(offsets("abcd"), [0]);
        assert_eq!(offsets("abcde"), [0, 1]);
        assert_eq!(offsets("abcdefgh"), [0, 4]);
        assert_eq!(offsets("abcdefghi"), [0, 4, 5]);
        assert_eq!(held_cover("있습니다만", |_| true).unwrap()[1].1, "습니다만");
    }

    #[test]
    fn a_held_cover_pins_every_character_with_held_grams_only() {
        let offsets = |k: &str, held: &[&str]| {
            held_cover(k, |g| held.contains(&g))
                .map(|cover| cover.into_iter().map(|(i, _)| i).collect::<Vec<_>>())
        };
        // `efgh` is not held: `defg` and `fghi` pin its characters.
        let held = ["abcd", "defg", "fghi"];
        assert_eq!(offsets("abcdefghi", &held), Some(vec![0, 3, 5]));
        // `c` is only in `abcd`, `bcde` and `cdef`, and none is held.
        assert_eq!(offsets("abcdefgh", &["defg", "efgh"]), None);
        assert_eq!(offsets("abcde", &[]), None);
        assert_eq!(offsets("abc", &["abc"]), None);
    }

    fn tokens<T: Tokenizer>(mut t: T, text: &str) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut s = t.token_stream(text);
        while s.advance() {
            out.push((s.token().text.clone(), s.token().position));
        }
        out
    }

    #[test]
    fn grams_have_increasing_positions_and_keep_spaces() {
        assert_eq!(
            tokens(GramTokenizer::new(2), "스프링 Boot"),
            [
                ("스프".into(), 0),
                ("프링".into(), 1),
                ("링 ".into(), 2),
                (" b".into(), 3),
                ("bo".into(), 4),
                ("oo".into(), 5),
                ("ot".into(), 6)
            ]
        );
        assert!(tokens(GramTokenizer::new(2), "가").is_empty());
        assert_eq!(
            tokens(GramTokenizer::fourgram(Fourgrams::every()), "abcd").len(),
            1
        );
        assert_eq!(
            tokens(GramTokenizer::fourgram(Fourgrams::every()), "abcabcabc").len(),
            6
        );
    }

    /// The distinct grams of `text` as the doc-id-only fields index them.
    fn distinct(text: &str, n: usize) -> Vec<String> {
        distinct_holding(text, n, &Trigrams::every())
    }

    fn distinct_holding(text: &str, n: usize, trigrams: &Trigrams) -> Vec<String> {
        let grams = distinct_grams(&normalize(text), trigrams, &Fourgrams::every());
        tokens(ChunkTokenizer::new(n), &grams[n - 1])
            .into_iter()
            .map(|(gram, _)| gram)
            .collect()
    }

    /// Of the trigrams, only the common ones, and the text's last once;
    /// the shorter grams are all there.
    #[test]
    fn distinct_trigrams_are_the_common_ones_and_the_last() {
        let common = Trigrams::only(["abc", "bcd"]);
        let text = "abcdabcdabx";
        assert_eq!(distinct_holding(text, 3, &common), ["abc", "bcd", "abx"]);
        assert_eq!(distinct_holding(text, 2, &common), distinct(text, 2));
        let last_common = Trigrams::only(["abx"]);
        assert_eq!(distinct_holding(text, 3, &last_common), ["abx"]);
        assert!(distinct_holding("ab", 3, &common).is_empty());
    }

    /// Only the held 4-grams get positions, at their character index; the
    /// others are the rare ones, each once.
    #[test]
    fn held_fourgrams_keep_positions_and_the_rest_are_rare() {
        let held = Fourgrams::only(["abcd", "cdab"]);
        assert_eq!(
            tokens(GramTokenizer::fourgram(held.clone()), "abcdabcdx"),
            [("abcd".into(), 0), ("cdab".into(), 2), ("abcd".into(), 4)]
        );
        let [_, _, _, rare] = distinct_grams("abcdabcdx", &Trigrams::every(), &held);
        let rare: Vec<String> = tokens(ChunkTokenizer::new(4), &rare)
            .into_iter()
            .map(|(gram, _)| gram)
            .collect();
        assert_eq!(rare, ["bcda", "dabc", "bcdx"]);
        let [.., none] = distinct_grams("abcdabcdx", &Trigrams::every(), &Fourgrams::every());
        assert!(none.is_empty());
    }

    #[test]
    fn distinct_grams_are_every_gram_once() {
        assert_eq!(distinct("가나가나 가나", 2), ["가나", "나가", "나 ", " 가"]);
        assert_eq!(distinct("aAa", 1), ["a"]);
        assert_eq!(distinct("abcabc", 3), ["abc", "bca", "cab"]);
        assert!(distinct("가나", 3).is_empty());
        assert_eq!(distinct("가", 1), ["가"]);
        assert!(distinct("", 1).is_empty());
        // Against the overlapping grams, deduplicated, on text of 1- to
        // 4-byte characters and repeats (`𝒜` is 4 bytes; NFKC makes it `a`).
        let text = "Ωmega 한국어 ß 𝒜𝒜 é̂ 😀😀a😀 가나다가나다\u{0}끝";
        for n in 1..=3 {
            let mut expected: Vec<String> = Vec::new();
            for (gram, _) in tokens(GramTokenizer::new(n), text) {
                if !expected.contains(&gram) {
                    expected.push(gram);
                }
            }
            assert_eq!(distinct(text, n), expected, "{n}-grams");
        }
    }

    #[test]
    fn chunks_cut_consecutive_grams_and_drop_a_partial_one() {
        assert_eq!(
            tokens(ChunkTokenizer::new(2), "가나다라마"),
            [("가나".into(), 0), ("다라".into(), 6)]
        );
        assert!(tokens(ChunkTokenizer::new(3), "").is_empty());
    }
}
