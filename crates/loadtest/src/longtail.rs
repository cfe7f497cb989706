//! The long tail: queries the server has never seen, sampled from the rows
//! it holds, each sent once per run.
//!
//! A keyword list, however long, is soon cached: after its first query a
//! keyword's answer and per-segment totals are kept, and a test that cycles
//! through it measures the cache. Real traffic is long-tailed. These queries
//! are cut from the server's own rows, fetched over the search API alone
//! (no database access, no demo route; see [`fetch_texts`]): substrings of
//! 1 to 8 characters, two words ANDed, and quoted two-word phrases, in the
//! proportions a search box sees, never repeated.

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

/// Characters nearly every text holds, in Korean and Latin prose: a search
/// for one of them reaches most of the rows.
const BROAD: &[&str] = &["이", "다", "는", "에", "의", "e", "a", "o", "t", "0", "1"];

/// Windows of `created_at` that the sampling searches spread over.
const WINDOWS: i64 = 200;

/// Fetches up to `want` texts from the server's own rows over the search
/// API alone, so it works on any chaja (a site's `[[source]]` tables as
/// well as the demo): hits of a broad character, newest first, in random
/// windows of the index's time span; each hit's title and snippet, their
/// highlighting undone, are texts. `admin_key` is sent when given, so
/// that these searches are not counted as trends.
pub async fn fetch_texts(
    host: &str,
    want: usize,
    admin_key: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    let client = crate::client(admin_key)?;
    let search = |query: String| {
        let client = client.clone();
        let url = format!("{host}/api/search?{query}");
        async move {
            let body: Value = client
                .get(url)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            anyhow::Ok(body)
        }
    };
    // The broadest character, and the time span of its matches.
    let mut broad = None;
    for c in BROAD {
        let body = search(format!("q={}&size=1", crate::urlencode(c))).await?;
        let total = body["total"].as_u64().unwrap_or(0);
        if broad.as_ref().is_none_or(|(_, best)| total > *best) {
            broad = Some((c.to_string(), total));
        }
    }
    let Some((broad, total)) = broad.filter(|(_, total)| *total > 0) else {
        anyhow::bail!("the server finds no rows: index some first (chaja reindex, or chaja seed for the demo)");
    };
    let q = crate::urlencode(&broad);
    let at = |body: &Value| -> Option<i64> {
        let text = body["hits"][0]["created_at"].as_str()?;
        let time =
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .ok()?;
        Some((time.unix_timestamp_nanos() / 1_000_000) as i64)
    };
    let newest = at(&search(format!("q={q}&size=1")).await?).unwrap_or(0);
    let oldest = at(&search(format!("q={q}&size=1&sort=oldest")).await?).unwrap_or(0);
    let span = (newest - oldest).max(1);
    let mut texts = Vec::with_capacity(want);
    let mut tries = 0;
    while texts.len() < want && tries < 4 * WINDOWS {
        tries += 1;
        let from = oldest + span * rand::rng().random_range(0..WINDOWS) / WINDOWS;
        let to = from + span / WINDOWS;
        let body = search(format!(
            "q={q}&size=100&from={}&to={}",
            crate::urlencode(&rfc3339(from)),
            crate::urlencode(&rfc3339(to))
        ))
        .await?;
        for hit in body["hits"].as_array().into_iter().flatten() {
            for field in ["title", "snippet"] {
                if let Some(html) = hit[field].as_str() {
                    let text = plain(html);
                    if text.chars().count() >= 8 {
                        texts.push(text);
                    }
                }
            }
        }
        // A small index has fewer rows than windows: all of them will do.
        if total < 100 && !texts.is_empty() {
            break;
        }
    }
    anyhow::ensure!(
        !texts.is_empty(),
        "found no rows to sample queries from: index some first (chaja reindex, or chaja seed for the demo)"
    );
    texts.truncate(want);
    Ok(texts)
}

fn rfc3339(ms: i64) -> String {
    let time = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    time.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The text of a hit's title or snippet: its `<em>` marks and the `…` of a
/// cut removed, HTML entities read back.
pub fn plain(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
        .trim_matches(|c: char| c == '…' || c.is_whitespace())
        .to_owned()
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
    fn highlighting_is_undone() {
        assert_eq!(
            plain("… 스프링 <em>부트</em>에서 a &lt;b&gt; &amp; &quot;c&quot; …"),
            "스프링 부트에서 a <b> & \"c\""
        );
    }

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
