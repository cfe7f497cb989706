//! `chaja seed`: realistic questions and reviews, written straight into the
//! tables (so the outbox triggers, or `reindex`, must pick them up).
//!
//! Deterministic per row: question `i` (its text, author, time, reviews and
//! likes) comes from a random generator seeded by `--seed` and `i` alone, so
//! the same seed gives the same rows and [`Generator::question`] regenerates
//! any one of them. By default its sentences are drawn by a word chain over
//! real sentences (`--corpus`, or the built-in templates without one), so
//! that they seldom repeat, as on a real board (see `novel`); `--text
//! corpus-runs` writes runs of the corpus's sentences instead, as every
//! figure before issue 64 did. The summary line says how much repeats
//! (`repeated sentences N%`, see `repeats`). Rare tokens (error codes,
//! versions, identifiers) and one
//! unique word per thousand questions are mixed in, so that rare and
//! single-document keywords exist at any scale. Likes per question follow a
//! Zipf law (most have none, a few have thousands).
//!
//! While it writes, seed counts in how many rows (title or content,
//! normalized as searches are) each of a few hundred candidate keywords
//! occurs, and writes the ones that fall in the benchmark classes to a
//! keyword manifest (see [`Manifest`]) that the load test and benchmarks read.

mod generator;
mod keywords;
mod novel;
mod repeats;
mod text;

pub use generator::{unique_word, GeneratedQuestion, GeneratedReview, Generator};
pub use text::{TextKind, TextSource};

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use chaja_core::clock::now_ms;
use chaja_core::manifest::Manifest;
use chaja_store::Db;

use crate::Result;
use generator::START_MS;
use keywords::KeywordCounter;
use repeats::SentenceCounter;

const BATCH: usize = 200;

/// What `chaja seed` writes.
#[derive(Debug, Clone)]
pub struct SeedConfig {
    /// Rows, questions and reviews together: a third of them questions,
    /// each with two reviews on average.
    pub rows: u64,
    /// The same seed gives the same rows.
    pub seed: u64,
    /// Real sentences to draw text from; `None`: the built-in templates.
    pub corpus: Option<std::path::PathBuf>,
    /// How the text is written from them.
    pub text: TextKind,
    /// Where the keyword manifest goes.
    pub manifest: std::path::PathBuf,
}

/// Seeds the demo's tables of `db` (migrated first) and writes the keyword
/// manifest; returns what to print.
pub async fn run(db: &Db, args: &SeedConfig) -> Result<String> {
    crate::migrate(db).await?;
    let text = TextSource::of(args.text, args.corpus.as_deref())?;
    let questions = args.rows.div_ceil(3);
    let n = seed(db, questions, args.seed, &text, true).await?;
    let manifest = serde_json::to_vec_pretty(&n.manifest).expect("manifest serializes");
    std::fs::write(&args.manifest, manifest)?;
    Ok(format!(
        "seeded {} rows: {} questions, {} reviews, {} likes ({} users); repeated sentences {:.1}% ({} of {} sentence occurrences); keyword manifest in {}",
        n.questions + n.reviews,
        n.questions,
        n.reviews,
        n.likes,
        n.users,
        n.repeated_percent,
        n.repeated_sentences,
        n.sentences,
        args.manifest.display()
    ))
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Seeded {
    pub users: u64,
    pub questions: u64,
    pub reviews: u64,
    pub likes: u64,
    /// Sentence occurrences in every row's text, and those that repeat an
    /// earlier one (see `repeats`).
    pub sentences: u64,
    pub repeated_sentences: u64,
    pub repeated_percent: f64,
    pub manifest: Manifest,
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
    let mut sentences = SentenceCounter::default();

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
        for question in &batch {
            for text in question.rows() {
                sentences.count(&text);
            }
        }
        let mut tx = db.pool.begin().await?;
        let mut sql = String::from(
            "INSERT INTO questions (id, author_id, title, content, created_at, updated_at, like_count) VALUES ",
        );
        sql.push_str(&vec!["(?, ?, ?, ?, ?, ?, ?)"; batch.len()].join(", "));
        let mut q = sqlx::query(&sql);
        for (k, question) in batch.iter().enumerate() {
            q = q
                .bind(question_id + k as i64)
                .bind(question.author)
                .bind(question.title.as_str())
                .bind(question.content.as_str())
                .bind(question.created_at)
                .bind(question.created_at)
                .bind(question.likes as i64);
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
                "INSERT INTO reviews (id, question_id, author_id, content, created_at, updated_at, rating) VALUES ",
            );
            sql.push_str(&vec!["(?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", "));
            let mut q = sqlx::query(&sql);
            for (id, qid, review) in chunk {
                q = q
                    .bind(*id)
                    .bind(*qid)
                    .bind(review.author)
                    .bind(review.content.as_str())
                    .bind(review.created_at)
                    .bind(review.created_at)
                    .bind(review.rating);
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
    done.sentences = sentences.occurrences;
    done.repeated_sentences = sentences.repeats;
    done.repeated_percent = sentences.percent();
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

async fn next_id(db: &Db, table: &str) -> Result<i64> {
    let max: Option<i64> = sqlx::query_scalar(&format!("SELECT MAX(id) FROM {table}"))
        .fetch_one(&db.pool)
        .await?;
    Ok(max.unwrap_or(0) + 1)
}
