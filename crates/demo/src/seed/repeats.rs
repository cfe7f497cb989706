//! How much of a seed's text repeats: the share of sentence occurrences
//! that repeat an earlier one, which decides what a rebuild's analysis
//! costs (it analyses each distinct sentence once). Every benchmark
//! records it with its data.

use std::collections::HashSet;
use std::hash::BuildHasher;

/// Counts sentence occurrences, and those seen before, in the order
/// rows are counted.
#[derive(Default)]
pub(super) struct SentenceCounter {
    /// 64-bit hashes of the sentences seen: at 1M rows, tens of millions
    /// of occurrences fit in a few hundred megabytes, where the sentences
    /// would take gigabytes. Two sentences sharing a hash (about one in
    /// 10^11 pairs at that size) would count one repeat too many.
    seen: HashSet<u64>,
    hasher: std::collections::hash_map::RandomState,
    pub(super) occurrences: u64,
    pub(super) repeats: u64,
}

impl SentenceCounter {
    /// Counts the sentences of `text`: runs ended by `.`, `?` or `!`
    /// before a space or the end (not `sys.path` or `3.12`), or by a line
    /// break, trimmed.
    pub(super) fn count(&mut self, text: &str) {
        let mut start = 0;
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            let ends =
                c == '\n' || matches!(c, '.' | '?' | '!') && next.is_none_or(char::is_whitespace);
            if ends {
                let end = at + c.len_utf8();
                self.sentence(&text[start..end]);
                start = end;
            }
        }
        self.sentence(&text[start..]);
    }

    fn sentence(&mut self, sentence: &str) {
        let sentence = sentence.trim();
        if sentence.is_empty() {
            return;
        }
        self.occurrences += 1;
        if !self.seen.insert(self.hasher.hash_one(sentence)) {
            self.repeats += 1;
        }
    }

    /// Repeats as a percentage of occurrences.
    pub(super) fn percent(&self) -> f64 {
        match self.occurrences {
            0 => 0.0,
            n => 100.0 * self.repeats as f64 / n as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_seen_before_counts_once_per_repeat() {
        let mut counter = SentenceCounter::default();
        counter.count("감사합니다. 서버가 느립니다.\n감사합니다.");
        counter.count("감사합니다! 새 문장입니다?");
        assert_eq!((counter.occurrences, counter.repeats), (5, 1));
        counter.count("서버가 느립니다.");
        assert_eq!(counter.repeats, 2);
        assert!((counter.percent() - 100.0 * 2.0 / 6.0).abs() < 1e-9);
        // A period inside a word ends no sentence.
        counter.count("sys.path 를 봅니다. 파이썬 3.12 입니다");
        assert_eq!((counter.occurrences, counter.repeats), (8, 2));
    }
}
