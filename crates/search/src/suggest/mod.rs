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
//! the index; and its cost is bounded: a prefix whose range holds more
//! than [`SCAN_CAP`] keys (`ㄱ`, `a`) has its best [`MAX_LIMIT`] kept at
//! build time, and is answered from those.

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

/// The most suggestions one lookup returns (the API's `limit`).
pub const MAX_LIMIT: usize = 50;

/// A prefix range of at most this many keys is scanned; a longer one is
/// answered from its best entries, kept when the candidates are built.
pub const SCAN_CAP: usize = 256;

/// Keys around the query's place that `did_you_mean` compares with it.
const NEIGHBOURS: usize = 2_000;

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
    /// Prefixes of more than `SCAN_CAP` keys: their best `MAX_LIMIT`
    /// entries, best first.
    top_keystrokes: HashMap<String, Vec<u32>>,
    top_initials: HashMap<String, Vec<u32>>,
}

/// For every prefix (in characters) shared by more than `SCAN_CAP` keys,
/// its best `MAX_LIMIT` entries, best first. Each length's long ranges are
/// disjoint, so this is O(keys × key length) to build and holds at most
/// `MAX_LIMIT` entries per `SCAN_CAP` keys per length.
fn long_ranges(keys: &[(String, u32)], entries: &[Suggestion]) -> HashMap<String, Vec<u32>> {
    let mut top = HashMap::new();
    let longest = keys
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for length in 1..=longest {
        let prefix_of = |key: &str| -> Option<String> {
            let end = key.char_indices().nth(length).map_or(key.len(), |(i, _)| i);
            (key.chars().count() >= length).then(|| key[..end].to_owned())
        };
        let mut start = 0;
        while start < keys.len() {
            let Some(prefix) = prefix_of(&keys[start].0) else {
                start += 1;
                continue;
            };
            let len = keys[start..].partition_point(|(k, _)| k.starts_with(prefix.as_str()));
            if len > SCAN_CAP {
                let mut range: Vec<u32> =
                    keys[start..start + len].iter().map(|(_, i)| *i).collect();
                best_first(&mut range, entries, MAX_LIMIT);
                top.insert(prefix, range);
            }
            start += len.max(1);
        }
    }
    top
}

/// Keeps the best `limit` of `found`, best first: highest score, then text.
fn best_first(found: &mut Vec<u32>, entries: &[Suggestion], limit: usize) {
    let order = |a: &u32, b: &u32| {
        let (a, b) = (&entries[*a as usize], &entries[*b as usize]);
        b.score.cmp(&a.score).then_with(|| a.text.cmp(&b.text))
    };
    if found.len() > limit && limit > 0 {
        found.select_nth_unstable_by(limit - 1, order);
        found.truncate(limit);
    }
    found.sort_unstable_by(order);
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
        let by_keystrokes = keyed(hangul::keystrokes);
        let by_initials = keyed(hangul::initials);
        Candidates {
            top_keystrokes: long_ranges(&by_keystrokes, &entries),
            top_initials: long_ranges(&by_initials, &entries),
            by_keystrokes,
            by_initials,
            entries,
        }
    }

    /// Entries whose key starts with `prefix`: a range's every entry when
    /// it is short, else its best `MAX_LIMIT`. At most `SCAN_CAP`.
    fn prefixed(keys: &[(String, u32)], top: &HashMap<String, Vec<u32>>, prefix: &str) -> Vec<u32> {
        if let Some(best) = top.get(prefix) {
            return best.clone();
        }
        let start = keys.partition_point(|(k, _)| k.as_str() < prefix);
        keys[start..]
            .iter()
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(SCAN_CAP)
            .map(|(_, i)| *i)
            .collect()
    }

    /// The best `limit` completions of `query`, and how many entries were
    /// looked at to find them (at most a few `SCAN_CAP`, whatever the
    /// query).
    fn lookup_counted(&self, query: &str, limit: usize) -> (Vec<Suggestion>, usize) {
        let limit = limit.min(MAX_LIMIT);
        let normalized = normalize(query.trim());
        let mut found: Vec<u32> = Vec::new();
        if hangul::is_initials(&normalized) {
            let key = hangul::initials(&normalized);
            found.extend(Self::prefixed(&self.by_initials, &self.top_initials, &key));
        } else {
            let key = hangul::keystrokes(&normalized);
            found.extend(Self::prefixed(
                &self.by_keystrokes,
                &self.top_keystrokes,
                &key,
            ));
        }
        if let Some(key) = hangul::from_latin_keyboard(query.trim()) {
            found.extend(Self::prefixed(
                &self.by_keystrokes,
                &self.top_keystrokes,
                &key,
            ));
        }
        let examined = found.len();
        found.sort_unstable();
        found.dedup();
        best_first(&mut found, &self.entries, limit);
        let hits = found
            .iter()
            .map(|&i| self.entries[i as usize].clone())
            .collect();
        (hits, examined)
    }

    fn lookup(&self, query: &str, limit: usize) -> Vec<Suggestion> {
        self.lookup_counted(query, limit).0
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
            let start = self
                .by_keystrokes
                .partition_point(|(k, _)| k.as_str() < key.as_str());
            let exact = self.by_keystrokes[start..]
                .iter()
                .take_while(|(k, _)| *k == key)
                .map(|(_, i)| *i)
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
            // The keys that start with the same keystroke, and of those the
            // `NEIGHBOURS` around the query's own place: a bounded cost on
            // any vocabulary (a typo in the first keystrokes of a long,
            // common beginning may be missed).
            let first = first.to_string();
            let keys = &self.by_keystrokes;
            let from = keys.partition_point(|(k, _)| k.as_str() < first.as_str());
            let to = from + keys[from..].partition_point(|(k, _)| k.starts_with(first.as_str()));
            let query_key: String = key.iter().collect();
            let at = from + keys[from..to].partition_point(|(k, _)| *k < query_key);
            let low = at.saturating_sub(NEIGHBOURS / 2).max(from);
            let high = (low + NEIGHBOURS).min(to);
            let neighbours = keys[low..high].iter();
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

    /// Up to `limit` (at most [`MAX_LIMIT`]) completions of `query`, best
    /// first. Bounded work (see the module), but CPU work: call it off the
    /// async workers.
    pub fn suggest(&self, query: &str, limit: usize) -> Vec<Suggestion> {
        let candidates = self.current.read().expect("suggest lock").clone();
        candidates.lookup(query, limit)
    }

    /// Up to `limit` words a query that found little may have meant (see
    /// `Candidates::did_you_mean`); the caller checks each finds something.
    /// Blocking: it compares the query with up to `NEIGHBOURS` words that
    /// start with the same keystroke.
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

    /// A one-keystroke query on a vocabulary where most words start with
    /// it looks at no more than the kept best, not at every word; and the
    /// kept best are the best.
    #[test]
    fn a_short_prefix_looks_at_a_bounded_number_of_entries() {
        let counts = (0..50_000u64).map(|i| (format!("가{i:05}"), i % 997));
        let c = Candidates::build(counts.collect());
        for query in ["ㄱ", "가", "가1", "rk"] {
            let (found, examined) = c.lookup_counted(query, 10);
            assert!(examined <= 2 * SCAN_CAP, "{query}: looked at {examined}");
            assert_eq!(found.len(), 10, "{query}");
            // The best of all of them.
            assert!(found.iter().all(|s| s.score == 996), "{query}: {found:?}");
        }
        let (found, examined) = c.lookup_counted("가4999", 10);
        assert_eq!(found.len(), 10);
        assert!(examined <= SCAN_CAP);
        assert!(c.did_you_mean("가499999", 3).len() <= 3);
    }
}
