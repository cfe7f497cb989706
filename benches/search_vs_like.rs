//! Search latency by keyword class, chaja against `LIKE` on the same rows.
//!
//! What it measures, in one run on one machine:
//! - `reindex` of every question and review in the database (rows/s);
//! - chaja: top-10 newest plus exact total for each keyword: the first run
//!   (which counts every segment; later ones reuse per-segment totals), then
//!   p50/p99 over `CHAJA_BENCH_ITER` runs after 2 more warm-up runs, single
//!   query at a time, in-process (no HTTP);
//! - the baseline users have today: `LIKE '%kw%' ORDER BY created_at DESC,
//!   id DESC LIMIT 10` plus `COUNT(*)`, on questions and on reviews, timed once
//!   per keyword straight against MySQL/MariaDB.
//!
//! Keywords: one per class of the manifest `chaja seed` wrote
//! (`CHAJA_BENCH_MANIFEST`), or a fixed list whose shares are measured.
//!
//! Run: `CHAJA_BENCH_DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench \
//!       cargo bench --bench search_vs_like` on a database filled by `chaja seed`.

use std::time::{Duration, Instant};

use chaja_core::manifest::Manifest;
use chaja_core::text::parse_query;
use chaja_index::search::{search, Request};
use chaja_index::SearchIndex;
use chaja_mirror::reindex::reindex;
use chaja_store::Db;

/// Keyword classes; the share of matching rows is measured, not assumed.
const KEYWORDS: &[(&str, &str)] = &[
    ("1 char", "이"),
    ("1 char", "캐"),
    ("2 chars", "니다"),
    ("2 chars", "파이"),
    ("2 chars", "함수"),
    ("3 chars", "습니다"),
    ("3 chars", "파이썬"),
    ("3 chars", "트리에"),
    ("4+ chars", "있습니다"),
    ("4+ chars", "반환합니다"),
    ("4+ chars", "인터프리터"),
    ("4+ chars", "트레이스백"),
    ("Latin/code", "None"),
    ("Latin/code", "useState"),
    ("Latin/code", "ERR-0042"),
    ("multi-word", "파이썬 함수"),
    ("phrase", "\"값을 반환합니다\""),
];

#[tokio::main]
async fn main() {
    let url = std::env::var("CHAJA_BENCH_DATABASE_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/chaja_bench".to_owned());
    let iterations: usize = std::env::var("CHAJA_BENCH_ITER")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    // The index is built (or was, by `chaja reindex`) with the dictionary.
    let ko_dic = std::env::var("CHAJA_KO_DIC")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/data/ko-dic").to_owned());
    chaja_index::morph::init(std::path::Path::new(&ko_dic));
    let db = Db::connect_lazy(&url, 2).expect("database url");
    chaja_demo::migrate(&db)
        .await
        .expect("database reachable and migrated");
    // CHAJA_BENCH_INDEX keeps the built index for another run with
    // CHAJA_BENCH_REUSE=1, which skips the rebuild.
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = std::env::var_os("CHAJA_BENCH_INDEX")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    let reuse = std::env::var("CHAJA_BENCH_REUSE").is_ok_and(|v| v == "1");
    let started = Instant::now();
    let rebuilt = if reuse {
        let index = SearchIndex::open_or_create(&dir, &chaja_demo::sources()).expect("open index");
        let docs = index.live().num_docs();
        chaja_mirror::reindex::Rebuilt {
            generation: index.live().id,
            docs,
            outbox_seq: 0,
            unreadable: Vec::new(),
            skipped: 0,
            stages: Default::default(),
        }
    } else {
        let options = chaja_mirror::reindex::RebuildOptions {
            writer_memory: 512 << 20,
            positions: chaja_index::PositionsShare::EVERY,
        };
        reindex(&db, &chaja_demo::sources(), &dir, options, false)
            .await
            .expect("reindex")
    };
    let took = started.elapsed();
    let text_bytes: i64 = sqlx::query_scalar(
        "SELECT CAST((SELECT COALESCE(SUM(LENGTH(title) + LENGTH(content)), 0) FROM questions) \
         + (SELECT COALESCE(SUM(LENGTH(content)), 0) FROM reviews) AS SIGNED)",
    )
    .fetch_one(&db.pool)
    .await
    .expect("text size");
    let index_bytes = dir_size(&dir);
    println!(
        "{}: {} rows in {:.1} s ({:.0} rows/s); text {:.1} MB, index {:.1} MB ({:.2}× text)\n",
        if reuse {
            "reused index (not timed)"
        } else {
            "reindex"
        },
        rebuilt.docs,
        took.as_secs_f64(),
        rebuilt.docs as f64 / took.as_secs_f64(),
        text_bytes as f64 / 1e6,
        index_bytes as f64 / 1e6,
        index_bytes as f64 / text_bytes as f64
    );

    let index = SearchIndex::open_or_create(&dir, &chaja_demo::sources()).expect("open index");
    let generation = index.live();
    println!("| class | keyword | rows matched | share | chaja first ms | chaja p50 ms | chaja p99 ms | LIKE ms | LIKE rows | LIKE ÷ chaja p50 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    // chaja first, for every keyword, then the slow baseline: the chaja
    // figures are taken while nothing else runs.
    // With CHAJA_BENCH_MANIFEST (written by `chaja seed`), one keyword per
    // class of the manifest, plus the multi-word and phrase queries.
    let keywords: Vec<(String, String)> = match std::env::var_os("CHAJA_BENCH_MANIFEST") {
        Some(path) => {
            let bytes = std::fs::read(path).expect("manifest readable");
            let manifest: Manifest = serde_json::from_slice(&bytes).expect("manifest parses");
            manifest
                .representatives()
                .into_iter()
                .map(|(class, word)| (class, word.keyword))
                .chain(
                    KEYWORDS
                        .iter()
                        .filter(|(class, _)| *class == "multi-word" || *class == "phrase")
                        .map(|(c, q)| (c.to_string(), q.to_string())),
                )
                .collect()
        }
        None => KEYWORDS
            .iter()
            .map(|(c, q)| (c.to_string(), q.to_string()))
            .collect(),
    };
    let mut measured = Vec::new();
    for (class, q) in &keywords {
        let request = Request::newest_first(parse_query(q), 10);
        // The first run counts every segment and reads the postings; later
        // runs reuse the per-segment totals. Recorded apart, then 2 more
        // warm-up runs.
        let t = Instant::now();
        search(&generation, &request).expect("search");
        let first = t.elapsed();
        for _ in 0..2 {
            search(&generation, &request).expect("search");
        }
        let mut times = Vec::with_capacity(iterations);
        let mut total = 0;
        for _ in 0..iterations.max(1) {
            let t = Instant::now();
            let response = search(&generation, &request).expect("search");
            times.push(t.elapsed());
            total = response.total;
        }
        times.sort();
        let p50 = times[times.len() / 2];
        let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
        measured.push((class, q, total, first, p50, p99));
    }
    let mut ratios = Vec::new();
    for (class, q, total, first, p50, p99) in measured {
        let (like, like_rows) = like_baseline(&db, q).await;
        let ratio = like.as_secs_f64() / p50.as_secs_f64();
        ratios.push(ratio);
        println!(
            "| {class} | {q} | {total} | {:.1}% | {:.2} | {:.2} | {:.2} | {:.0} | {like_rows} | {:.0}× |",
            100.0 * total as f64 / rebuilt.docs as f64,
            ms(first),
            ms(p50),
            ms(p99),
            ms(like),
            ratio
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "\nmedian keyword: LIKE ÷ chaja = {:.0}×",
        ratios[ratios.len() / 2]
    );
}

/// `LIKE` the way the platforms run it: newest 10 plus a count, per table.
/// Quoted phrases lose their quotes; words are ANDed as chaja does.
async fn like_baseline(db: &Db, q: &str) -> (Duration, i64) {
    let words: Vec<String> = parse_query(q)
        .into_iter()
        .map(|k| format!("%{}%", k.as_str()))
        .collect();
    let question_where = vec!["(title LIKE ? OR content LIKE ?)"; words.len()].join(" AND ");
    let review_where = vec!["content LIKE ?"; words.len()].join(" AND ");
    let started = Instant::now();
    let mut rows = 0i64;
    for (table, condition, binds_per_word) in [
        ("questions", &question_where, 2),
        ("reviews", &review_where, 1),
    ] {
        let top = format!(
            "SELECT id FROM {table} WHERE {condition} ORDER BY created_at DESC, id DESC LIMIT 10"
        );
        let count = format!("SELECT COUNT(*) FROM {table} WHERE {condition}");
        let mut top_query = sqlx::query(&top);
        let mut count_query = sqlx::query_scalar::<_, i64>(&count);
        for word in &words {
            for _ in 0..binds_per_word {
                top_query = top_query.bind(word.clone());
                count_query = count_query.bind(word.clone());
            }
        }
        top_query.fetch_all(&db.pool).await.expect("LIKE top 10");
        rows += count_query.fetch_one(&db.pool).await.expect("LIKE count");
    }
    (started.elapsed(), rows)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn dir_size(path: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            dir_size(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}
