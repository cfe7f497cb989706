//! The manifest's keywords: candidates proposed by sample questions, and
//! in how many generated rows each occurs.

use std::collections::{BTreeMap, HashMap, HashSet};

use aho_corasick::AhoCorasick;
use rayon::prelude::*;

use chaja_core::manifest::{KeywordCount, Manifest};
use chaja_core::text::normalize;

use super::generator::{unique_word, GeneratedQuestion, Generator};

/// Questions whose text proposes the manifest's candidate keywords.
pub(super) const SAMPLE_QUESTIONS: u64 = 400;

/// Counts, over every generated row, the rows each candidate keyword is in.
pub(super) struct KeywordCounter {
    candidates: Vec<String>,
    matcher: AhoCorasick,
    rows: Vec<u64>,
}

/// Length classes of the manifest, and the share targets of its frequency
/// classes with the band of exact shares each accepts.
pub(super) const FREQUENCIES: [(&str, f64, f64, f64); 4] = [
    (">80%", 0.9, 0.8, 1.0),
    ("~10%", 0.1, 0.05, 0.2),
    ("~1%", 0.01, 0.005, 0.02),
    ("~0.1%", 0.001, 0.0005, 0.002),
];

pub(super) fn length_class(keyword: &str) -> &'static str {
    if keyword.is_ascii() {
        return "Latin/code";
    }
    match keyword.chars().count() {
        1 => "1 char",
        2 => "2 chars",
        3 => "3 chars",
        _ => "4+ chars",
    }
}

/// Keeps a candidate: Hangul syllables only, or an ASCII token of at least
/// three characters with a letter, starting and ending with a letter or
/// digit (no spaces or quotes, which a query would split or phrase).
pub(super) fn plausible(word: &str) -> bool {
    let hangul = |c: char| ('\u{AC00}'..='\u{D7A3}').contains(&c);
    if word.chars().all(hangul) {
        return true;
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    word.len() >= 3
        && word.chars().all(|c| c.is_ascii_graphic() && c != '"')
        && word.chars().any(|c| c.is_ascii_alphabetic())
        && edge(word.chars().next())
        && edge(word.chars().last())
}

impl KeywordCounter {
    /// Proposes candidates from the substrings of the first questions'
    /// rows: for each length class, those whose share there is nearest each
    /// target; plus the unique words of the first questions.
    pub(super) fn new(generator: &Generator<'_>) -> KeywordCounter {
        let sample: Vec<String> = (0..SAMPLE_QUESTIONS.min(generator.rows))
            .into_par_iter()
            .flat_map_iter(|i| {
                let rows: Vec<String> = generator.question(i).rows().collect();
                rows.into_iter().map(|row| normalize(&row))
            })
            .collect();
        let mut in_rows: HashMap<&str, u32> = HashMap::new();
        for text in &sample {
            let bounds: Vec<usize> = text
                .char_indices()
                .map(|(b, _)| b)
                .chain([text.len()])
                .collect();
            let mut seen: HashSet<&str> = HashSet::new();
            for s in 0..bounds.len() - 1 {
                for len in 1..=6 {
                    let Some(&end) = bounds.get(s + len) else {
                        break;
                    };
                    let word = &text[bounds[s]..end];
                    if plausible(word) {
                        seen.insert(word);
                    }
                }
            }
            for word in seen {
                *in_rows.entry(word).or_default() += 1;
            }
        }
        let n = sample.len().max(1) as f64;
        let mut by_class: BTreeMap<&str, Vec<(&str, f64)>> = BTreeMap::new();
        for (word, rows) in &in_rows {
            by_class
                .entry(length_class(word))
                .or_default()
                .push((word, f64::from(*rows) / n));
        }
        let mut candidates: Vec<String> = Vec::new();
        for words in by_class.values_mut() {
            for (_, target, _, _) in FREQUENCIES {
                // Nearest in log share, ties by text: deterministic.
                words.sort_by(|a, b| {
                    let d = |s: f64| (s.ln() - f64::ln(target)).abs();
                    d(a.1).total_cmp(&d(b.1)).then_with(|| a.0.cmp(b.0))
                });
                candidates.extend(words.iter().take(12).map(|(w, _)| (*w).to_owned()));
            }
        }
        candidates.extend(
            (0..generator.rows)
                .filter(|i| i % 1000 == 7)
                .take(5)
                .map(unique_word),
        );
        candidates.sort_unstable();
        candidates.dedup();
        let matcher = AhoCorasick::new(&candidates).expect("keyword automaton builds");
        KeywordCounter {
            rows: vec![0; candidates.len()],
            candidates,
            matcher,
        }
    }

    pub(super) fn count(&mut self, batch: &[GeneratedQuestion]) {
        let found: Vec<Vec<usize>> = batch
            .par_iter()
            .flat_map_iter(GeneratedQuestion::rows)
            .map(|row| {
                let text = normalize(&row);
                let mut ids: Vec<usize> = self
                    .matcher
                    .find_overlapping_iter(&text)
                    .map(|m| m.pattern().as_usize())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            })
            .collect();
        for ids in found {
            for id in ids {
                self.rows[id] += 1;
            }
        }
    }

    pub(super) fn manifest(&self, seed: u64, rows: u64) -> Manifest {
        let total = rows.max(1) as f64;
        let mut classes: BTreeMap<String, Vec<KeywordCount>> = BTreeMap::new();
        for (keyword, &count) in self.candidates.iter().zip(&self.rows) {
            let share = count as f64 / total;
            let length = length_class(keyword);
            let frequency = if count == 1 {
                Some(("1 row", 0.0))
            } else {
                FREQUENCIES
                    .iter()
                    .find(|(_, _, low, high)| (*low..=*high).contains(&share))
                    .map(|(name, target, _, _)| (*name, *target))
            };
            if let Some((name, target)) = frequency {
                let class = format!("{length} {name}");
                let entry = KeywordCount {
                    keyword: keyword.clone(),
                    rows: count,
                    share,
                };
                classes.entry(class).or_default().push(entry);
                let list = classes
                    .get_mut(&format!("{length} {name}"))
                    .expect("inserted");
                list.sort_by(|a, b| {
                    let d = |s: f64| {
                        if target == 0.0 {
                            0.0
                        } else {
                            (s.ln() - target.ln()).abs()
                        }
                    };
                    d(a.share)
                        .total_cmp(&d(b.share))
                        .then_with(|| a.keyword.cmp(&b.keyword))
                });
                list.truncate(5);
            }
        }
        Manifest {
            seed,
            rows,
            classes,
        }
    }
}
