//! Similar posts, first queries: the posts most like a row (`id=`) and like
//! a text not stored yet (`text=`, a post's own title and body), for rows
//! picked at random, none asked twice, in process (no HTTP, no cache),
//! one at a time, after reading the index into the page cache as `serve`
//! does.
//!
//! Run:
//! `CHAJA_BENCH_DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_1m \
//!  CHAJA_BENCH_INDEX=/path/to/index CHAJA_KO_DIC=data/ko-dic \
//!  cargo bench --bench similar`
//! (`CHAJA_BENCH_QUERIES`: rows per mode, default 1000;
//! `CHAJA_BENCH_SEED`: a number, for the same rows in every run.)

use std::time::{Duration, Instant};

use chaja_core::sources::SourceId;
use chaja_index::search::similar::{similar, SimilarInput, SimilarRequest};
use chaja_index::search::{Budget, Filter};
use chaja_index::SearchIndex;
use chaja_store::Db;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sqlx::Row;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let url = std::env::var("CHAJA_BENCH_DATABASE_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/chaja_bench".to_owned());
    let dir = std::env::var("CHAJA_BENCH_INDEX")
        .expect("CHAJA_BENCH_INDEX: an index built by chaja reindex");
    let per_mode = env_usize("CHAJA_BENCH_QUERIES", 1000);
    let ko_dic = std::env::var("CHAJA_KO_DIC")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/data/ko-dic").to_owned());
    chaja_index::morph::init(std::path::Path::new(&ko_dic));
    let db = Db::connect_lazy(&url, 2).expect("database url");
    let mut rng = match std::env::var("CHAJA_BENCH_SEED") {
        Ok(seed) => StdRng::seed_from_u64(seed.parse().expect("CHAJA_BENCH_SEED: a number")),
        Err(_) => StdRng::from_os_rng(),
    };
    let max: i64 = sqlx::query("SELECT MAX(id) FROM questions")
        .fetch_one(&db.pool)
        .await
        .expect("questions")
        .get(0);
    // Rows picked at random, none twice: their ids, titles and bodies.
    let mut picked = std::collections::BTreeSet::new();
    while picked.len() < per_mode.min(max as usize) {
        picked.insert(rng.random_range(1..=max));
    }
    let ids: Vec<String> = picked.iter().map(i64::to_string).collect();
    let rows = sqlx::query(&format!(
        "SELECT id, title, content FROM questions WHERE id IN ({})",
        ids.join(",")
    ))
    .fetch_all(&db.pool)
    .await
    .expect("questions readable");
    let text = |r: &sqlx::any::AnyRow, i: usize| {
        r.try_get::<String, _>(i)
            .unwrap_or_else(|_| String::from_utf8_lossy(&r.get::<Vec<u8>, _>(i)).into_owned())
    };
    let posts: Vec<(i64, String, String)> = rows
        .iter()
        .map(|r| (r.get::<i64, _>(0), text(r, 1), text(r, 2)))
        .collect();

    let index = SearchIndex::open_or_create(std::path::Path::new(&dir), &chaja_demo::sources())
        .expect("open index");
    let generation = index.live();
    let warmed = chaja_index::warm::warm(
        &generation.path,
        chaja_index::warm::default_budget(),
        &|| true,
    )
    .expect("warm the index");
    println!(
        "{} rows in the index; read {} MB of it into the page cache first, as serve does",
        generation.num_docs(),
        warmed.bytes >> 20
    );
    let chars: usize = posts
        .iter()
        .map(|(_, t, b)| t.chars().count() + b.chars().count())
        .sum();
    println!(
        "{} posts, {} characters on average",
        posts.len(),
        chars / posts.len().max(1)
    );
    let question = SourceId::from_index(0);
    let view = generation.view();
    for mode in ["id=", "text="] {
        let mut times: Vec<Duration> = Vec::with_capacity(posts.len());
        let mut empty = 0;
        for (id, title, body) in &posts {
            let input = match mode {
                "id=" => SimilarInput::Row {
                    source: question,
                    key: id.to_string(),
                },
                _ => SimilarInput::Text {
                    title: Some(title.clone()),
                    body: body.clone(),
                },
            };
            let request = SimilarRequest {
                input,
                filter: Filter::default(),
                size: 5,
            };
            let started = Instant::now();
            let found = similar(&generation, &view, &request, &Budget::unlimited())
                .expect("a like search")
                .expect("the row is indexed");
            times.push(started.elapsed());
            empty += usize::from(found.hits.is_empty());
        }
        times.sort();
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{mode:<6} {} queries: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {empty} without a hit",
            times.len(),
            ms(at(0.5)),
            ms(at(0.99)),
            ms(*times.last().unwrap()),
        );
    }
}
