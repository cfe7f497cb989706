//! `chaja seed`: realistic questions and reviews, written straight into the
//! tables (so the outbox triggers, or `reindex`, must pick them up).
//!
//! Deterministic per row: question `i` (its text, author, time, reviews and
//! likes) comes from a random generator seeded by `--seed` and `i` alone, so
//! the same seed gives the same rows and [`Generator::question`] regenerates
//! any one of them. Text comes from real sentences with `--corpus`, or from a
//! small built-in generator of Korean developer Q&A prose that copies no
//! corpus text. Rare tokens (error codes, versions, identifiers) and one
//! unique word per thousand questions are mixed in, so that rare and
//! single-document keywords exist at any scale. Likes per question follow a
//! Zipf law (most have none, a few have thousands).
//!
//! While it writes, seed counts in how many rows (title or content,
//! normalized as searches are) each of a few hundred candidate keywords
//! occurs, and writes the ones that fall in the benchmark classes to a
//! keyword manifest (see [`Manifest`]) that the load test and benchmarks read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;

use aho_corasick::AhoCorasick;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rayon::prelude::*;

use chaja_core::clock::now_ms;
use chaja_core::manifest::{KeywordCount, Manifest};
use chaja_core::text::normalize;
use chaja_store::Db;

use crate::{DemoError, Result};

const BATCH: usize = 200;
const THREE_YEARS_MS: i64 = 3 * 365 * 24 * 3600 * 1000;
/// `created_at` of the first question (2023-11-14): fixed, so that a seed
/// gives the same rows on any day. The last ones are three years later.
const START_MS: i64 = 1_700_000_000_000;

/// Questions whose text proposes the manifest's candidate keywords.
const SAMPLE_QUESTIONS: u64 = 400;

/// What `chaja seed` writes.
#[derive(Debug, Clone)]
pub struct SeedConfig {
    /// Questions; each gets about two reviews.
    pub rows: u64,
    /// The same seed gives the same rows.
    pub seed: u64,
    /// Real sentences to draw text from; `None`: the built-in generator.
    pub corpus: Option<std::path::PathBuf>,
    /// Where the keyword manifest goes.
    pub manifest: std::path::PathBuf,
}

/// Seeds the demo's tables of `db` (migrated first) and writes the keyword
/// manifest; returns what to print.
pub async fn run(db: &Db, args: &SeedConfig) -> Result<String> {
    crate::migrate(db).await?;
    let text = match &args.corpus {
        Some(path) => TextSource::from_corpus(path)?,
        None => TextSource::Builtin,
    };
    let n = seed(db, args.rows, args.seed, &text, true).await?;
    let manifest = serde_json::to_vec_pretty(&n.manifest).expect("manifest serializes");
    std::fs::write(&args.manifest, manifest)?;
    Ok(format!(
        "seeded {} questions, {} reviews, {} likes ({} users); keyword manifest in {}",
        n.questions,
        n.reviews,
        n.likes,
        n.users,
        args.manifest.display()
    ))
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Seeded {
    pub users: u64,
    pub questions: u64,
    pub reviews: u64,
    pub likes: u64,
    pub manifest: Manifest,
}

/// One question as generated, with its reviews and likes.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedQuestion {
    pub author: i64,
    pub title: String,
    pub content: String,
    pub created_at: i64,
    pub reviews: Vec<GeneratedReview>,
    /// Users who like it: `likes` consecutive users from `first_liker`.
    pub likes: u64,
    pub first_liker: i64,
}

impl GeneratedQuestion {
    /// The searchable text of each row: the question (title and content,
    /// on two lines, so no keyword spans them), then each review.
    fn rows(&self) -> impl Iterator<Item = String> + '_ {
        std::iter::once(format!("{}\n{}", self.title, self.content))
            .chain(self.reviews.iter().map(|r| r.content.clone()))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedReview {
    pub author: i64,
    pub content: String,
    pub created_at: i64,
}

/// What a seed run generates, row by row.
pub struct Generator<'a> {
    pub seed: u64,
    pub rows: u64,
    pub users: u64,
    pub first_user: i64,
    /// `created_at` of question 0.
    pub start: i64,
    pub text: &'a TextSource,
}

impl Generator<'_> {
    fn step(&self) -> i64 {
        (THREE_YEARS_MS / self.rows.max(1) as i64).max(1)
    }

    /// Question `index` of this run, from `seed` and `index` alone.
    pub fn question(&self, index: u64) -> GeneratedQuestion {
        let mut rng = StdRng::seed_from_u64(self.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let step = self.step();
        // Increasing with the index, jittered within the first half of the step.
        let created_at = self.start + index as i64 * step + rng.random_range(0..step.max(2) / 2);
        let user = |rng: &mut StdRng| self.first_user + rng.random_range(0..self.users) as i64;
        let author = user(&mut rng);
        let title = self.text.title(&mut rng);
        let mut content = self.text.body(&mut rng);
        if index % 1000 == 7 {
            content.push(' ');
            content.push_str(&unique_word(index));
        }
        let reviews = (0..rng.random_range(0..=4u32))
            .map(|r| GeneratedReview {
                author: user(&mut rng),
                content: self.text.body(&mut rng),
                created_at: created_at + 60_000 * i64::from(r + 1) + rng.random_range(0..60_000),
            })
            .collect();
        // P(k likes) ∝ (k + 1)^-2.5: three in four questions have none.
        let zipf = Zipf::new(self.users as f64, 2.5).expect("valid zipf");
        let likes = (zipf.sample(&mut rng) as u64 - 1).min(self.users);
        let first_liker = user(&mut rng);
        GeneratedQuestion {
            author,
            title,
            content,
            created_at,
            reviews,
            likes,
            first_liker,
        }
    }
}

/// A word that occurs in question `index` only: a rare syllable and four
/// syllables spelling the index.
pub fn unique_word(index: u64) -> String {
    let mut word = String::from("뷁");
    let mut n = index.wrapping_mul(2_654_435_761) % 11_172u64.pow(4);
    for _ in 0..4 {
        word.push(char::from_u32(0xAC00 + (n % 11_172) as u32).expect("hangul syllable"));
        n /= 11_172;
    }
    word
}

/// Inserts `rows` questions, about two reviews each, their authors and their
/// likes, and counts the manifest's keywords.
pub async fn seed(
    db: &Db,
    rows: u64,
    seed: u64,
    text: &TextSource,
    progress: bool,
) -> Result<Seeded> {
    let users = (rows / 10).clamp(1, 100_000);
    let first_user = next_id(db, "users").await?;
    for chunk in (0..users).collect::<Vec<_>>().chunks(1000) {
        let mut sql = String::from("INSERT INTO users (id, name, created_at) VALUES ");
        sql.push_str(&vec!["(?, ?, ?)"; chunk.len()].join(", "));
        let mut q = sqlx::query(&sql);
        for i in chunk {
            q = q
                .bind(first_user + *i as i64)
                .bind(format!("user{}", first_user + *i as i64))
                .bind(now_ms());
        }
        q.execute(&db.pool).await?;
    }
    let generator = Generator {
        seed,
        rows,
        users,
        first_user,
        start: START_MS,
        text,
    };
    let mut counter = KeywordCounter::new(&generator);

    let bar = if progress {
        let bar = ProgressBar::new(rows);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} questions {per_sec} eta {eta}")
                .expect("valid progress template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut question_id = next_id(db, "questions").await?;
    let mut review_id = next_id(db, "reviews").await?;
    let mut done = Seeded {
        users,
        ..Seeded::default()
    };
    let mut i = 0u64;
    while i < rows {
        let count = BATCH.min((rows - i) as usize);
        let batch: Vec<GeneratedQuestion> = (i..i + count as u64)
            .into_par_iter()
            .map(|index| generator.question(index))
            .collect();
        counter.count(&batch);
        let mut tx = db.pool.begin().await?;
        let mut sql = String::from(
            "INSERT INTO questions (id, author_id, title, content, created_at, updated_at) VALUES ",
        );
        sql.push_str(&vec!["(?, ?, ?, ?, ?, ?)"; batch.len()].join(", "));
        let mut q = sqlx::query(&sql);
        for (k, question) in batch.iter().enumerate() {
            q = q
                .bind(question_id + k as i64)
                .bind(question.author)
                .bind(question.title.as_str())
                .bind(question.content.as_str())
                .bind(question.created_at)
                .bind(question.created_at);
        }
        q.execute(&mut *tx).await?;
        let mut reviews = Vec::new();
        let mut likes = Vec::new();
        for (k, question) in batch.iter().enumerate() {
            let qid = question_id + k as i64;
            for review in &question.reviews {
                reviews.push((review_id, qid, review));
                review_id += 1;
            }
            if question.likes > 0 {
                likes.push((qid, question));
            }
        }
        for chunk in reviews.chunks(BATCH) {
            let mut sql = String::from(
                "INSERT INTO reviews (id, question_id, author_id, content, created_at, updated_at) VALUES ",
            );
            sql.push_str(&vec!["(?, ?, ?, ?, ?, ?)"; chunk.len()].join(", "));
            let mut q = sqlx::query(&sql);
            for (id, qid, review) in chunk {
                q = q
                    .bind(*id)
                    .bind(*qid)
                    .bind(review.author)
                    .bind(review.content.as_str())
                    .bind(review.created_at)
                    .bind(review.created_at);
            }
            q.execute(&mut *tx).await?;
        }
        done.likes += insert_likes(&mut tx, &likes, &generator).await?;
        tx.commit().await?;
        done.questions += batch.len() as u64;
        done.reviews += reviews.len() as u64;
        question_id += batch.len() as i64;
        i += count as u64;
        bar.inc(count as u64);
    }
    bar.finish_and_clear();
    done.manifest = counter.manifest(seed, done.questions + done.reviews);
    Ok(done)
}

/// The like rows and like counts of a batch's liked questions.
async fn insert_likes(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    liked: &[(i64, &GeneratedQuestion)],
    generator: &Generator<'_>,
) -> Result<u64> {
    let mut rows: Vec<(i64, i64)> = Vec::new();
    for (qid, question) in liked {
        for k in 0..question.likes {
            let offset = (question.first_liker - generator.first_user) as u64 + k;
            rows.push((
                *qid,
                generator.first_user + (offset % generator.users) as i64,
            ));
        }
    }
    for chunk in rows.chunks(1000) {
        let mut sql = String::from("INSERT INTO question_likes (question_id, user_id) VALUES ");
        sql.push_str(&vec!["(?, ?)"; chunk.len()].join(", "));
        let mut q = sqlx::query(&sql);
        for (qid, user) in chunk {
            q = q.bind(*qid).bind(*user);
        }
        q.execute(&mut **tx).await?;
    }
    for chunk in liked.chunks(BATCH) {
        let mut sql = String::from("INSERT INTO question_stats (question_id, like_count) VALUES ");
        sql.push_str(&vec!["(?, ?)"; chunk.len()].join(", "));
        let mut q = sqlx::query(&sql);
        for (qid, question) in chunk {
            q = q.bind(*qid).bind(question.likes as i64);
        }
        q.execute(&mut **tx).await?;
    }
    Ok(rows.len() as u64)
}

/// Counts, over every generated row, the rows each candidate keyword is in.
struct KeywordCounter {
    candidates: Vec<String>,
    matcher: AhoCorasick,
    rows: Vec<u64>,
}

/// Length classes of the manifest, and the share targets of its frequency
/// classes with the band of exact shares each accepts.
const FREQUENCIES: [(&str, f64, f64, f64); 4] = [
    (">80%", 0.9, 0.8, 1.0),
    ("~10%", 0.1, 0.05, 0.2),
    ("~1%", 0.01, 0.005, 0.02),
    ("~0.1%", 0.001, 0.0005, 0.002),
];

fn length_class(keyword: &str) -> &'static str {
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
fn plausible(word: &str) -> bool {
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
    fn new(generator: &Generator<'_>) -> KeywordCounter {
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

    fn count(&mut self, batch: &[GeneratedQuestion]) {
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

    fn manifest(&self, seed: u64, rows: u64) -> Manifest {
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

async fn next_id(db: &Db, table: &str) -> Result<i64> {
    let max: Option<i64> = sqlx::query_scalar(&format!("SELECT MAX(id) FROM {table}"))
        .fetch_one(&db.pool)
        .await?;
    Ok(max.unwrap_or(0) + 1)
}

/// Where the prose comes from.
pub enum TextSource {
    Builtin,
    /// Groups of consecutive sentences from one source document.
    Corpus(Vec<Vec<String>>),
}

impl TextSource {
    /// Reads `sentences.tsv.gz` (`source<TAB>group<TAB>sentence`) or
    /// `docs.jsonl.gz` (`{"title","content"}`), gzipped or not.
    pub fn from_corpus(path: &Path) -> Result<TextSource> {
        let file = std::fs::File::open(path)?;
        let reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(BufReader::new(flate2::read::GzDecoder::new(file)))
        } else {
            Box::new(BufReader::new(file))
        };
        let jsonl = path.to_string_lossy().contains(".jsonl");
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut last_group = String::new();
        for line in reader.lines() {
            let line = line?;
            if jsonl {
                let doc: serde_json::Value = serde_json::from_str(&line)
                    .map_err(|e| DemoError::Corpus(format!("bad corpus line: {e}")))?;
                let content = doc["content"].as_str().unwrap_or_default();
                let sentences: Vec<String> = content
                    .split_inclusive(['.', '?', '!', '\n'])
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect();
                if !sentences.is_empty() {
                    groups.push(sentences);
                }
            } else {
                let mut parts = line.splitn(3, '\t');
                let (Some(_src), Some(group), Some(sentence)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                if group != last_group || groups.is_empty() {
                    groups.push(Vec::new());
                    last_group = group.to_owned();
                }
                groups
                    .last_mut()
                    .expect("pushed above")
                    .push(sentence.to_owned());
            }
        }
        if groups.is_empty() {
            return Err(DemoError::Corpus("the corpus has no sentences".to_owned()));
        }
        Ok(TextSource::Corpus(groups))
    }

    pub fn title(&self, rng: &mut StdRng) -> String {
        match self {
            TextSource::Builtin => {
                let t = pick(rng, TITLES);
                fill(t, rng)
            }
            TextSource::Corpus(groups) => {
                let group = &groups[rng.random_range(0..groups.len())];
                let s = &group[rng.random_range(0..group.len())];
                let mut title: String = s.chars().take(60).collect();
                if rng.random_ratio(1, 5) {
                    title.push(' ');
                    title.push_str(&rare_token(rng));
                }
                title
            }
        }
    }

    /// About 1,500 characters (log-normal), with a rare token now and then.
    pub fn body(&self, rng: &mut StdRng) -> String {
        let normal: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
        let target = (1500.0 * (0.35 * normal).exp()).clamp(200.0, 12_000.0) as usize;
        let mut body = String::with_capacity(target * 3 + 64);
        let mut chars = 0;
        match self {
            TextSource::Builtin => {
                while chars < target {
                    let s = fill(pick(rng, SENTENCES), rng);
                    chars += s.chars().count() + 1;
                    body.push_str(&s);
                    body.push(' ');
                }
            }
            TextSource::Corpus(groups) => {
                let mut g = rng.random_range(0..groups.len());
                let mut k = rng.random_range(0..groups[g].len());
                while chars < target {
                    let s = &groups[g][k];
                    chars += s.chars().count() + 1;
                    body.push_str(s);
                    body.push(' ');
                    k += 1;
                    if k == groups[g].len() {
                        g = (g + 1) % groups.len();
                        k = 0;
                    }
                }
            }
        }
        if rng.random_ratio(1, 3) {
            body.push_str(&rare_token(rng));
        }
        body.trim_end().to_owned()
    }
}

fn pick<'a>(rng: &mut StdRng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// Replaces `{n}` (noun), `{t}` (technology) and `{p}` (problem) slots.
fn fill(template: &str, rng: &mut StdRng) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let slot = &rest[start + 1..start + 2];
        out.push_str(match slot {
            "n" => pick(rng, NOUNS),
            "t" => pick(rng, TECH),
            _ => pick(rng, PROBLEMS),
        });
        rest = &rest[start + 3..];
    }
    out.push_str(rest);
    out
}

/// A token that is rare at any scale: an error code, a version, an identifier.
fn rare_token(rng: &mut StdRng) -> String {
    match rng.next_u32() % 3 {
        0 => format!("ERR-{:05}", rng.random_range(0..100_000)),
        1 => format!(
            "v{}.{}.{}",
            rng.random_range(0..20),
            rng.random_range(0..50),
            rng.random_range(0..100)
        ),
        _ => format!(
            "{}{}{}",
            pick(rng, &["load", "parse", "fetch", "build", "sync"]),
            pick(rng, &["User", "Order", "Token", "Cache", "Index"]),
            rng.random_range(0..1000)
        ),
    }
}

const TITLES: &[&str] = &[
    "{t}에서 {n} 설정 시 {p} 문제",
    "{t} {n}가 동작하지 않습니다",
    "{n}를 {t}로 옮길 때 {p}가 납니다",
    "{t} 사용 중 {p} 해결 방법이 있을까요?",
    "{n}와 {n} 중 무엇을 써야 하나요",
    "{t}로 {n} 구현하기 리뷰 부탁드립니다",
    "{t} 버전 업그레이드 후 {p}",
    "{n} 성능 개선 질문",
];

const SENTENCES: &[&str] = &[
    "{t}에서 {n}를 사용할 때 {p}가 발생합니다.",
    "로컬에서는 잘 되는데 배포 환경에서만 {p}가 납니다.",
    "{n} 설정을 바꿔 보았지만 결과는 같았습니다.",
    "공식 문서에 따르면 {n}는 {t}에서 기본으로 켜져 있다고 합니다.",
    "혹시 {n}와 관련해서 비슷한 경험이 있으신 분 계신가요?",
    "테스트 코드를 작성해서 {p}를 재현해 보았습니다.",
    "{t} 버전을 올린 뒤부터 {n}가 느려졌습니다.",
    "리뷰 감사합니다. 말씀하신 대로 {n}를 분리해 보겠습니다.",
    "이 부분은 {n} 대신 {n}를 쓰면 더 간단해질 것 같습니다.",
    "트랜잭션 안에서 {n}를 호출하면 {p}가 생길 수 있습니다.",
    "로그를 보면 {n} 단계에서 시간이 가장 오래 걸립니다.",
    "캐시를 적용하니 응답 시간이 크게 줄었습니다.",
    "{t}의 {n} 옵션을 끄면 문제가 사라집니다.",
    "변수 이름을 조금 더 명확하게 바꾸면 좋겠습니다.",
    "예외 처리가 빠져 있어서 {p}가 그대로 노출됩니다.",
    "인덱스를 추가한 뒤 쿼리 실행 계획을 다시 확인했습니다.",
    "동시에 요청이 많아지면 {n}에서 병목이 생깁니다.",
    "결론적으로 {t}에서는 {n}를 권장합니다.",
    "커넥션 풀 크기를 늘려도 처리량은 그대로였습니다.",
    "이 코드는 {n}의 책임이 너무 많아 보입니다.",
];

const NOUNS: &[&str] = &[
    "엔티티",
    "리포지토리",
    "컨트롤러",
    "서비스 계층",
    "트랜잭션",
    "커넥션 풀",
    "인덱스",
    "캐시",
    "세션",
    "쿠키",
    "토큰",
    "스레드",
    "비동기 처리",
    "페이징",
    "정렬",
    "검색",
    "로그인",
    "회원가입",
    "게시글",
    "댓글",
    "좋아요",
    "알림",
    "배포",
    "테스트",
    "의존성 주입",
    "직렬화",
    "역직렬화",
    "쿼리",
    "조인",
    "지연 로딩",
    "즉시 로딩",
    "영속성 컨텍스트",
    "필터",
    "인터셉터",
    "미들웨어",
    "라우터",
    "컴포넌트",
    "상태 관리",
    "훅",
    "빌드",
    "번들",
    "타입",
    "제네릭",
    "클로저",
    "이터레이터",
    "소유권",
    "라이프타임",
    "메모리",
    "가비지 컬렉션",
    "로드 밸런서",
    "컨테이너",
    "이미지",
    "볼륨",
    "환경 변수",
];

const TECH: &[&str] = &[
    "Spring Boot",
    "JPA",
    "MySQL",
    "Redis",
    "React",
    "Next.js",
    "Node.js",
    "Django",
    "FastAPI",
    "Rust",
    "Kotlin",
    "Docker",
    "Kubernetes",
    "nGrinder",
    "JMeter",
    "k6",
    "QueryDSL",
    "MyBatis",
    "Nginx",
    "GitHub Actions",
    "AWS",
    "Elasticsearch",
    "Kafka",
    "TypeScript",
    "Python",
];

const PROBLEMS: &[&str] = &[
    "N+1 문제",
    "데드락",
    "타임아웃",
    "메모리 누수",
    "NullPointerException",
    "CORS 에러",
    "순환 참조",
    "중복 저장",
    "동시성 문제",
    "인코딩 깨짐",
    "404 에러",
    "500 에러",
    "느린 쿼리",
    "무한 루프",
    "스택 오버플로",
    "권한 오류",
    "연결 끊김",
];
