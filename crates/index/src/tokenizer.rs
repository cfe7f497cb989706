//! Character n-gram tokenizers with real positions.
//!
//! tantivy's `NgramTokenizer` gives every gram position 0, so a phrase query
//! over its grams cannot check adjacency. These emit the grams of the
//! normalized text with `position = character index`: a slop-0 phrase of a
//! keyword's 4-grams then matches exactly where the keyword is a substring.
//! Spaces and punctuation are kept in the grams, as `LIKE` keeps them.

use std::cell::RefCell;
use std::sync::Arc;

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use chaja_core::text::normalize;

thread_local! {
    /// The last two texts normalized for indexing on this thread, and what
    /// they became.
    static RECENT: RefCell<[(String, Arc<str>); 2]> = RefCell::default();
}

/// [`normalize`], remembered for the next tokenizer. tantivy tokenizes a
/// document's fields in turn on one thread, and a row's text passes
/// through four gram tokenizers: comparing the text is much cheaper than
/// normalizing it again, which was a tenth of a rebuild.
pub fn normalize_for_indexing(text: &str) -> Arc<str> {
    RECENT.with_borrow_mut(|recent| {
        if let Some((_, normalized)) = recent.iter().find(|(raw, _)| raw == text) {
            return normalized.clone();
        }
        let normalized: Arc<str> = normalize(text).into();
        recent.swap(0, 1);
        recent[0] = (text.to_owned(), normalized.clone());
        normalized
    })
}

/// Overlapping grams of `n` characters of [`normalize`]d text.
#[derive(Clone, Debug)]
pub struct GramTokenizer {
    n: usize,
    /// Each gram once per text, for fields that keep doc ids only: repeats
    /// change nothing there but cost tantivy a hash lookup each, and in a
    /// row of Korean prose most characters and many bigrams are repeats.
    distinct: bool,
}

impl GramTokenizer {
    pub fn unigram() -> Self {
        GramTokenizer {
            n: 1,
            distinct: true,
        }
    }

    pub fn bigram() -> Self {
        GramTokenizer {
            n: 2,
            distinct: true,
        }
    }

    pub fn trigram() -> Self {
        GramTokenizer {
            n: 3,
            distinct: true,
        }
    }

    /// The positional grams: every occurrence, at its character index.
    pub fn fourgram() -> Self {
        GramTokenizer {
            n: 4,
            distinct: false,
        }
    }
}

pub struct GramStream {
    text: Arc<str>,
    /// Byte offset of every character, plus `text.len()` at the end.
    bounds: Vec<usize>,
    n: usize,
    /// The character index of each gram to emit, when not all of them are.
    starts: Option<Vec<usize>>,
    next: usize,
    token: Token,
}

impl Tokenizer for GramTokenizer {
    type TokenStream<'a> = GramStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> GramStream {
        let text = normalize_for_indexing(text);
        let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        bounds.push(text.len());
        let grams = bounds.len().saturating_sub(self.n);
        let starts = self.distinct.then(|| {
            let mut seen = foldhash::HashSet::with_capacity_and_hasher(grams, Default::default());
            (0..grams)
                .filter(|&i| seen.insert(&text[bounds[i]..bounds[i + self.n]]))
                .collect()
        });
        GramStream {
            text,
            bounds,
            n: self.n,
            starts,
            next: 0,
            token: Token::default(),
        }
    }
}

impl TokenStream for GramStream {
    fn advance(&mut self) -> bool {
        let pos = match &self.starts {
            Some(starts) => match starts.get(self.next) {
                Some(&pos) => pos,
                None => return false,
            },
            None => self.next,
        };
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

    fn tokens(mut t: GramTokenizer, text: &str) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut s = t.token_stream(text);
        while s.advance() {
            out.push((s.token().text.clone(), s.token().position));
        }
        out
    }

    #[test]
    fn bigrams_have_increasing_positions_and_keep_spaces() {
        assert_eq!(
            tokens(GramTokenizer::bigram(), "스프링 Boot"),
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
        assert!(tokens(GramTokenizer::bigram(), "가").is_empty());
        assert_eq!(tokens(GramTokenizer::trigram(), "abcd").len(), 2);
        assert_eq!(tokens(GramTokenizer::fourgram(), "abcd").len(), 1);
        assert_eq!(tokens(GramTokenizer::unigram(), "가A").len(), 2);
    }

    #[test]
    fn doc_id_grams_come_once_and_positional_ones_every_time() {
        assert_eq!(
            tokens(GramTokenizer::bigram(), "가나가나 가나"),
            [
                ("가나".into(), 0),
                ("나가".into(), 1),
                ("나 ".into(), 3),
                (" 가".into(), 4)
            ]
        );
        assert_eq!(tokens(GramTokenizer::unigram(), "aAa").len(), 1);
        assert_eq!(tokens(GramTokenizer::trigram(), "abcabc").len(), 3);
        assert_eq!(tokens(GramTokenizer::fourgram(), "abcabcabc").len(), 6);
    }
}
