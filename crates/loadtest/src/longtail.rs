//! The long tail: queries the server has never seen, sampled from the rows
//! it holds, each sent once per run.
//!
//! A keyword list, however long, is soon cached: after its first query a
//! keyword's answer and per-segment totals are kept, and a test that cycles
//! through it measures the cache. Real traffic is long-tailed. These queries
//! are cut from question and review texts fetched over the API (no database
//! access): substrings of 1 to 8 characters, two words ANDed, and quoted
//! two-word phrases, in the proportions a search box sees, never repeated.

use std::collections::HashSet;

use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::Value;

/// What a query is, for the summary's per-kind table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Chars(usize),
    And,
    Phrase,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Chars(1) => "longtail: 1 char",
            Class::Chars(2) => "longtail: 2 chars",
            Class::Chars(3) => "longtail: 3 chars",
            Class::Chars(4) => "longtail: 4 chars",
            Class::Chars(_) => "longtail: 5-8 chars",
            Class::And => "longtail: two words",
            Class::Phrase => "longtail: phrase",
        }
    }
}

/// Texts to cut queries from, and every query sent so far.
pub struct Sampler {
    texts: Vec<Vec<char>>,
    sent: HashSet<String>,
}

/// Fetches up to `want` texts: questions and reviews by random id, ids
/// that do not exist skipped. `docs` (from `/readyz`) bounds the ids.
pub async fn fetch_texts(host: &str, docs: u64, want: usize) -> anyhow::Result<Vec<String>> {
    let client = reqwest::Client::new();
    let mut texts = Vec::with_capacity(want);
    let mut tries = 0;
    while texts.len() < want && tries < want * 20 {
        tries += 1;
        let (kind, id) = {
            let mut rng = rand::rng();
            let kind = if rng.random_bool(0.5) {
                "questions"
            } else {
                "reviews"
            };
            (kind, rng.random_range(1..=docs.max(1)))
        };
        let response = client.get(format!("{host}/api/{kind}/{id}")).send().await?;
        if !response.status().is_success() {
            continue;
        }
        let row: Value = response.json().await?;
        let text = format!(
            "{} {}",
            row["title"].as_str().unwrap_or_default(),
            row["content"].as_str().unwrap_or_default()
        );
        if text.trim().chars().count() >= 8 {
            texts.push(text);
        }
    }
    anyhow::ensure!(
        !texts.is_empty(),
        "found no rows to sample queries from: seed the server first (chaja seed)"
    );
    Ok(texts)
}

/// What may not be in a query cut from a text: a quote changes its meaning
/// and control characters are refused.
fn usable(c: char) -> bool {
    c != '"' && !c.is_control()
}

impl Sampler {
    pub fn new(texts: Vec<String>) -> Sampler {
        Sampler {
            texts: texts.into_iter().map(|t| t.chars().collect()).collect(),
            sent: HashSet::new(),
        }
    }

    /// A query not sent before in this run. Short substrings run out first
    /// (there are only so many distinct characters); then another class is
    /// drawn.
    pub fn next(&mut self, rng: &mut impl Rng) -> Option<(Class, String)> {
        for _ in 0..1000 {
            let text = self.texts.choose(rng)?;
            let roll = rng.random_range(0..100);
            let candidate = if roll < 70 {
                let n = rng.random_range(1..=8usize);
                substring(text, n, rng).map(|q| (Class::Chars(n), q))
            } else {
                let words: Vec<String> = text
                    .iter()
                    .collect::<String>()
                    .split_whitespace()
                    .map(|w| w.chars().filter(|&c| usable(c)).collect::<String>())
                    .filter(|w| w.chars().count() >= 2)
                    .collect();
                if words.len() < 2 {
                    continue;
                }
                if roll < 85 {
                    let a = words.choose(rng)?;
                    let b = words.choose(rng)?;
                    (a != b).then(|| (Class::And, format!("{a} {b}")))
                } else {
                    let i = rng.random_range(0..words.len() - 1);
                    Some((Class::Phrase, format!("\"{} {}\"", words[i], words[i + 1])))
                }
            };
            if let Some((class, query)) = candidate {
                if self.sent.insert(query.clone()) {
                    return Some((class, query));
                }
            }
        }
        None
    }

    pub fn sent(&self) -> usize {
        self.sent.len()
    }
}

/// `n` characters of `text` from a random place, with no whitespace at
/// either end, quote or control character.
fn substring(text: &[char], n: usize, rng: &mut impl Rng) -> Option<String> {
    if text.len() < n {
        return None;
    }
    let start = rng.random_range(0..=text.len() - n);
    let piece = &text[start..start + n];
    let ok = piece.iter().all(|&c| usable(c))
        && !piece[0].is_whitespace()
        && !piece[n - 1].is_whitespace();
    ok.then(|| piece.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_come_from_the_texts_and_never_repeat() {
        let text = "스프링 부트에서 트랜잭션이 롤백되지 않는 이유를 찾았습니다";
        let mut sampler = Sampler::new(vec![text.to_owned()]);
        let mut rng = rand::rng();
        let mut seen = HashSet::new();
        while let Some((class, query)) = sampler.next(&mut rng) {
            assert!(seen.insert(query.clone()), "{query} twice");
            let bare = query.trim_matches('"');
            match class {
                Class::Chars(n) => {
                    assert_eq!(bare.chars().count(), n);
                    assert!(text.contains(bare), "{query}");
                }
                Class::Phrase => assert!(text.contains(bare), "{query}"),
                Class::And => {
                    assert!(bare.split(' ').all(|w| text.contains(w)), "{query}")
                }
            }
        }
        // Every usable query of one short text is eventually sent.
        assert!(sampler.sent() > 100, "{}", sampler.sent());
    }
}
