//! Sentences that do not repeat: a word-level Markov chain over real
//! sentences.
//!
//! A board's posts share their words, not their sentences: greetings and
//! "감사합니다." recur, a post's own sentences are its own. Rows cut from
//! runs of corpus sentences repeat almost every sentence at 100k rows,
//! which hides what analysing a sentence costs (the rebuild analyses each
//! distinct sentence once). This chain keeps the corpus's vocabulary and
//! how often each word follows another, so word frequencies keep their
//! Zipf shape and the grams their co-occurrence, while a sentence of a
//! dozen words drawn one transition at a time is almost never drawn
//! twice.
//!
//! The chain is of order one: each word is followed by a word that
//! followed it somewhere in the corpus, drawn in proportion to how often.
//! Order two reproduces long corpus runs wherever a pair of words has one
//! follower, which is most pairs in a corpus this size, and those runs are
//! the repeated sentences this is meant to avoid.

use rand::rngs::StdRng;
use rand::Rng;

/// Longest sentence the chain draws, in words: a chain that wanders
/// without reaching an end is cut there, and ended with a period.
const MAX_WORDS: usize = 40;

/// Shortest sentence kept, in words: a shorter draw is drawn again (a few
/// times), since two-word sentences repeat by chance alone.
const MIN_WORDS: usize = 4;

/// A word-level chain: for every word, the words that followed it, each
/// once per time it did (so that a uniform draw follows the corpus's
/// frequencies).
pub struct Chain {
    words: Vec<String>,
    /// Followers of each word (by index into `words`), and of the start.
    followers: Vec<Vec<u32>>,
    /// Words that began a sentence, each once per sentence.
    starts: Vec<u32>,
}

/// Marks the end of a sentence among a word's followers.
const END: u32 = u32::MAX;

impl Chain {
    /// The chain of `sentences` (each split on whitespace). `None` when
    /// they hold no word.
    pub fn of<'a>(sentences: impl IntoIterator<Item = &'a str>) -> Option<Chain> {
        let mut index: std::collections::HashMap<&'a str, u32> = Default::default();
        let mut words: Vec<String> = Vec::new();
        let mut followers: Vec<Vec<u32>> = Vec::new();
        let mut starts = Vec::new();
        for sentence in sentences {
            let mut previous: Option<u32> = None;
            for word in sentence.split_whitespace() {
                let id = *index.entry(word).or_insert_with(|| {
                    words.push(word.to_owned());
                    followers.push(Vec::new());
                    (words.len() - 1) as u32
                });
                match previous {
                    Some(p) => followers[p as usize].push(id),
                    None => starts.push(id),
                }
                previous = Some(id);
            }
            if let Some(p) = previous {
                followers[p as usize].push(END);
            }
        }
        (!starts.is_empty()).then_some(Chain {
            words,
            followers,
            starts,
        })
    }

    /// One sentence, drawn word by word.
    pub fn sentence(&self, rng: &mut StdRng) -> String {
        let mut words: Vec<u32> = Vec::new();
        for _ in 0..8 {
            words.clear();
            let mut at = self.starts[rng.random_range(0..self.starts.len())];
            loop {
                words.push(at);
                if words.len() == MAX_WORDS {
                    break;
                }
                let next = &self.followers[at as usize];
                // A word seen only last in a sentence has the end alone.
                let drawn = next[rng.random_range(0..next.len())];
                if drawn == END {
                    break;
                }
                at = drawn;
            }
            if words.len() >= MIN_WORDS {
                break;
            }
        }
        let mut sentence = String::new();
        for (i, id) in words.iter().enumerate() {
            if i > 0 {
                sentence.push(' ');
            }
            sentence.push_str(&self.words[*id as usize]);
        }
        if !sentence.ends_with(['.', '?', '!']) {
            sentence.push('.');
        }
        sentence
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Every word drawn follows its predecessor somewhere in the source,
    /// and the draws are the seed's alone.
    #[test]
    fn a_drawn_sentence_follows_the_sources_transitions() {
        let source = [
            "스프링 부트 설정을 바꾸면 서버가 다시 뜹니다.",
            "서버가 느리면 캐시를 먼저 확인합니다.",
            "캐시를 비우면 설정을 다시 읽습니다.",
        ];
        let chain = Chain::of(source).unwrap();
        let pairs: std::collections::HashSet<(&str, &str)> = source
            .iter()
            .flat_map(|s| {
                let words: Vec<&str> = s.split_whitespace().collect();
                (1..words.len())
                    .map(|i| (words[i - 1], words[i]))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..200 {
            let sentence = chain.sentence(&mut rng);
            let words: Vec<&str> = sentence.split_whitespace().collect();
            for pair in words.windows(2) {
                let last = pair[1].trim_end_matches('.');
                assert!(
                    pairs.contains(&(pair[0], pair[1])) || pairs.contains(&(pair[0], last)),
                    "{sentence}"
                );
            }
        }
        let draw = |seed| chain.sentence(&mut StdRng::seed_from_u64(seed));
        assert_eq!(draw(3), draw(3));
    }

    #[test]
    fn no_words_make_no_chain() {
        assert!(Chain::of(["", "   "]).is_none());
    }
}
