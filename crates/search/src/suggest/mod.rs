//! As-you-type suggestions: completions of what is being typed, from the
//! words of titles and from what people search, most popular
//! first.
//!
//! Candidates are the terms of the `title_morph` field (content morphemes
//! of titles; their document frequency is their popularity) and the
//! trending keywords of the last 24 hours (each search counts as
//! [`SEARCH_WEIGHT`] titles). They are rebuilt from the live index every
//! [`REFRESH`], off the request path, and kept as three sorted key lists:
//! keystrokes (plain prefixes, half-typed syllables, Latin-typed Hangul),
//! initials (초성) and plain text. A lookup is a binary search for the
//! prefix and a scan of its range, so it never touches the database or
//! the index.

pub mod hangul;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;
use tantivy::schema::Field;

use crate::trending::Trending;
use crate::Result;
use chaja_core::text::normalize;
use chaja_index::{Generation, SearchIndex};

/// How often candidates are rebuilt from the index and trending searches.
pub const REFRESH: Duration = Duration::from_secs(30);

/// One search in the last day weighs as much as this many titles.
pub const SEARCH_WEIGHT: u64 = 10;

/// Searched keywords taken as candidates.
const TRENDING_CANDIDATES: usize = 1_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Suggestion {
    pub text: String,
    /// Titles that contain it, plus weighted recent searches.
    pub score: u64,
}

#[derive(Default)]
struct Candidates {
    entries: Vec<Suggestion>,
    /// (key, entry index), sorted by key.
    by_keystrokes: Vec<(String, u32)>,
    by_initials: Vec<(String, u32)>,
}

impl Candidates {
    fn build(mut counts: HashMap<String, u64>) -> Candidates {
        counts.retain(|text, _| text.chars().count() >= 2);
        let entries: Vec<Suggestion> = counts
            .into_iter()
            .map(|(text, score)| Suggestion { text, score })
            .collect();
        let keyed = |key: fn(&str) -> String| {
            let mut keys: Vec<(String, u32)> = entries
                .iter()
                .enumerate()
                .map(|(i, e)| (key(&e.text), i as u32))
                .collect();
            keys.sort_unstable();
            keys
        };
        Candidates {
            by_keystrokes: keyed(hangul::keystrokes),
            by_initials: keyed(hangul::initials),
            entries,
        }
    }

    /// Entries whose key starts with `prefix`.
    fn prefixed<'a>(keys: &'a [(String, u32)], prefix: &'a str) -> impl Iterator<Item = u32> + 'a {
        let start = keys.partition_point(|(k, _)| k.as_str() < prefix);
        keys[start..]
            .iter()
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(_, i)| *i)
    }

    fn lookup(&self, query: &str, limit: usize) -> Vec<Suggestion> {
        let normalized = normalize(query.trim());
        let mut found: Vec<u32> = Vec::new();
        if hangul::is_initials(&normalized) {
            let key = hangul::initials(&normalized);
            found.extend(Self::prefixed(&self.by_initials, &key));
        } else {
            let key = hangul::keystrokes(&normalized);
            found.extend(Self::prefixed(&self.by_keystrokes, &key));
        }
        if let Some(key) = hangul::from_latin_keyboard(query.trim()) {
            found.extend(Self::prefixed(&self.by_keystrokes, &key));
        }
        found.sort_unstable();
        found.dedup();
        let order = |a: &&Suggestion, b: &&Suggestion| {
            b.score.cmp(&a.score).then_with(|| a.text.cmp(&b.text))
        };
        let mut hits: Vec<&Suggestion> = found.iter().map(|&i| &self.entries[i as usize]).collect();
        // A short prefix can match much of the vocabulary: select the top
        // `limit` first, then sort only those.
        if hits.len() > limit && limit > 0 {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits.into_iter().take(limit).cloned().collect()
    }

    /// What a query that found little may have meant, best first: the word
    /// it spells when typed on a Latin layout (`zmffkdnem` → 클라우드), the
    /// words its 초성 stand for, and the nearest word by keystroke edit
    /// distance (a typo). Only candidates, never the query itself.
    fn did_you_mean(&self, query: &str, limit: usize) -> Vec<String> {
        let normalized = normalize(query.trim());
        let by_score = |mut found: Vec<u32>| -> Vec<String> {
            found.sort_unstable_by(|&a, &b| {
                let (a, b) = (&self.entries[a as usize], &self.entries[b as usize]);
                b.score.cmp(&a.score).then_with(|| a.text.cmp(&b.text))
            });
            found
                .into_iter()
                .map(|i| self.entries[i as usize].text.clone())
                .collect()
        };
        let mut out: Vec<String> = Vec::new();
        if let Some(key) = hangul::from_latin_keyboard(query.trim()) {
            let exact = Self::prefixed(&self.by_keystrokes, &key)
                .filter(|&i| hangul::keystrokes(&self.entries[i as usize].text) == key)
                .collect();
            out.extend(by_score(exact));
        }
        if hangul::is_initials(&normalized) {
            out.extend(self.lookup(&normalized, limit).into_iter().map(|s| s.text));
        }
        let key: Vec<char> = hangul::keystrokes(&normalized).chars().collect();
        if let Some(first) = key.first() {
            // Words that start with the same keystroke and are about as
            // long: a bounded neighbourhood, however large the vocabulary.
            let most = (key.len() / 4).max(1);
            let mut best: Option<(usize, u32)> = None;
            let first = first.to_string();
            let start = self
                .by_keystrokes
                .partition_point(|(k, _)| k.as_str() < first.as_str());
            let neighbours = self.by_keystrokes[start..]
                .iter()
                .take_while(|(k, _)| k.starts_with(first.as_str()));
            for (other, i) in neighbours {
                let i = *i;
                let len = other.chars().count();
                if len.abs_diff(key.len()) > most {
                    continue;
                }
                let distance =
                    strsim::generic_levenshtein(&key, &other.chars().collect::<Vec<_>>());
                let better = match best {
                    None => true,
                    Some((d, j)) => {
                        distance < d
                            || (distance == d
                                && self.entries[i as usize].score > self.entries[j as usize].score)
                    }
                };
                if distance > 0 && distance <= most && better {
                    best = Some((distance, i));
                }
            }
            if let Some((_, i)) = best {
                out.push(self.entries[i as usize].text.clone());
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|t| *t != normalized && seen.insert(t.clone()));
        out.truncate(limit);
        out
    }
}

/// Cheap to clone; lookups read a snapshot that refreshes replace whole.
#[derive(Clone, Default)]
pub struct Suggester {
    current: Arc<RwLock<Arc<Candidates>>>,
}

impl Suggester {
    /// Candidates in the current snapshot.
    pub fn len(&self) -> usize {
        self.current.read().expect("suggest lock").entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn suggest(&self, query: &str, limit: usize) -> Vec<Suggestion> {
        let candidates = self.current.read().expect("suggest lock").clone();
        candidates.lookup(query, limit)
    }

    /// Up to `limit` words a query that found little may have meant (see
    /// `Candidates::did_you_mean`); the caller checks each finds something.
    /// Blocking: it compares the query with every word that starts with the
    /// same keystroke.
    pub fn did_you_mean(&self, query: &str, limit: usize) -> Vec<String> {
        let candidates = self.current.read().expect("suggest lock").clone();
        candidates.did_you_mean(query, limit)
    }

    /// Rebuilds the candidates from the live index and trending searches.
    pub async fn refresh(&self, index: &SearchIndex, trending: &Trending) -> Result<()> {
        let searched = match trending
            .top(crate::trending::Window::Day, TRENDING_CANDIDATES)
            .await
        {
            Ok(top) => top,
            Err(e) => {
                tracing::debug!(error = %e, "suggestions without trending searches");
                Vec::new()
            }
        };
        let generation = index.live();
        let candidates = tokio::task::spawn_blocking(move || -> Result<Candidates> {
            let mut counts = title_terms(&generation, generation.fields.title_morph)?;
            for trend in searched {
                *counts.entry(trend.keyword).or_default() += trend.count * SEARCH_WEIGHT;
            }
            Ok(Candidates::build(counts))
        })
        .await??;
        *self.current.write().expect("suggest lock") = Arc::new(candidates);
        Ok(())
    }

    /// Refreshes every [`REFRESH`] until `stop`.
    pub async fn run(
        self,
        index: SearchIndex,
        trending: Trending,
        stop: tokio_util::sync::CancellationToken,
    ) {
        loop {
            if let Err(e) = self.refresh(&index, &trending).await {
                tracing::warn!(error = ?e, "suggestion refresh failed; keeping the last ones");
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(REFRESH) => {}
            }
        }
    }
}

/// Every term of `field` with the number of documents that hold it.
fn title_terms(generation: &Generation, field: Field) -> Result<HashMap<String, u64>> {
    let searcher = generation.reader.searcher();
    let mut counts: HashMap<String, u64> = HashMap::new();
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field)?;
        let mut terms = inverted.terms().stream()?;
        while terms.advance() {
            if let Ok(text) = std::str::from_utf8(terms.key()) {
                *counts.entry(text.to_owned()).or_default() += u64::from(terms.value().doc_freq);
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates() -> Candidates {
        let counts = [
            ("클라우드", 50),
            ("클라우드 네이티브", 20),
            ("클래스", 30),
            ("클로저", 5),
            ("docker", 40),
            ("도커", 45),
            ("닭", 1),
            ("x", 100),
        ];
        Candidates::build(counts.iter().map(|(t, c)| (t.to_string(), *c)).collect())
    }

    fn texts(found: Vec<Suggestion>) -> Vec<String> {
        found.into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn prefixes_initials_half_syllables_and_keyboard_layouts() {
        let c = candidates();
        assert_eq!(
            texts(c.lookup("클", 10)),
            ["클라우드", "클래스", "클라우드 네이티브", "클로저"]
        );
        assert_eq!(
            texts(c.lookup("클라ㅇ", 10)),
            ["클라우드", "클라우드 네이티브"]
        );
        assert_eq!(
            texts(c.lookup("클랑", 10)),
            ["클라우드", "클라우드 네이티브"]
        );
        assert_eq!(
            texts(c.lookup("ㅋㄹㅇㄷ", 10)),
            ["클라우드", "클라우드 네이티브"]
        );
        assert_eq!(texts(c.lookup("ㅋㄹ", 1)), ["클라우드"]);
        assert_eq!(
            texts(c.lookup("zmffkdnem", 10)),
            ["클라우드", "클라우드 네이티브"]
        );
        assert_eq!(texts(c.lookup("Doc", 10)), ["docker"]);
        // `ehzj` is 도커 on a Korean keyboard.
        assert_eq!(texts(c.lookup("ehzj", 10)), ["도커"]);
        assert_eq!(
            texts(c.lookup("달ㄱ", 10)),
            Vec::<String>::new(),
            "one character is never a candidate"
        );
        assert!(c.lookup("없는말", 10).is_empty());
    }
}
