//! Suggestion latency on a real index: the time to build the candidates
//! from the index's title morphemes, and p50/p99 of lookups by kind of
//! input (prefix, 초성, half-typed syllable, Latin-typed Hangul).
//!
//! Run on an index built by `chaja reindex` with the dictionary:
//! `CHAJA_BENCH_INDEX=/path/idx CHAJA_KO_DIC=data/ko-dic cargo bench --bench suggest`

use std::time::Instant;

use chaja_index::SearchIndex;
use chaja_search::suggest::Suggester;
use chaja_search::trending::Trending;

const QUERIES: &[(&str, &str)] = &[
    ("prefix, 1 syllable", "파"),
    ("prefix, 1 syllable", "함"),
    ("prefix, 2 syllables", "파이"),
    ("prefix, 3 syllables", "인터프"),
    ("prefix, Latin", "use"),
    ("초성, 1", "ㅍ"),
    ("초성, 2", "ㅍㅇ"),
    ("초성, 3", "ㅍㅇㅆ"),
    ("half-typed", "파잇"),
    ("half-typed", "인터ㅍ"),
    ("Latin layout", "vkdl"),
    ("Latin layout", "dlsxj"),
    ("no match", "뷁뷁"),
];

#[tokio::main]
async fn main() {
    let dir = std::env::var("CHAJA_BENCH_INDEX").expect("set CHAJA_BENCH_INDEX to a built index");
    let ko_dic = std::env::var("CHAJA_KO_DIC")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/data/ko-dic").to_owned());
    chaja_index::morph::init(std::path::Path::new(&ko_dic));
    let iterations: usize = std::env::var("CHAJA_BENCH_ITER")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let index = SearchIndex::open_or_create(std::path::Path::new(&dir), &chaja_demo::sources())
        .expect("index opens");
    let suggester = Suggester::default();
    let started = Instant::now();
    suggester
        .refresh(&index, &Trending::new(None, 2, 1))
        .await
        .expect("candidates build");
    println!(
        "candidates: {} from {} docs, built in {:.0} ms",
        suggester.len(),
        index.live().num_docs(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    println!("| input | query | suggestions | p50 µs | p99 µs | top 3 |");
    println!("|---|---|---|---|---|---|");
    for (kind, q) in QUERIES {
        for _ in 0..10 {
            suggester.suggest(q, 10);
        }
        let mut times: Vec<f64> = (0..iterations)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(suggester.suggest(q, 10));
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let found = suggester.suggest(q, 10);
        let top: Vec<&str> = found.iter().take(3).map(|s| s.text.as_str()).collect();
        println!(
            "| {kind} | {q} | {} | {:.1} | {:.1} | {} |",
            found.len(),
            times[times.len() / 2],
            times[times.len() * 99 / 100],
            top.join(", ")
        );
    }
}
