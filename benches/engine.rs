//! The engine alone, under criterion: top-10 newest with the exact total,
//! one benchmark per keyword class of the manifest `chaja seed` wrote, on an
//! index built by `chaja reindex`. Statistics (median and its confidence
//! interval, outliers) are criterion's; `search_vs_like` reports p50/p99
//! against `LIKE` on the same classes.
//!
//! `CHAJA_BENCH_INDEX=/path/idx CHAJA_BENCH_MANIFEST=seed-manifest.json \
//!  cargo bench --bench engine`

use std::hint::black_box;

use chaja_core::manifest::Manifest;
use chaja_core::text::parse_query;
use chaja_index::search::{search, Request};
use chaja_index::SearchIndex;
use criterion::{criterion_group, criterion_main, Criterion};

fn engine(c: &mut Criterion) {
    let (Some(dir), Some(manifest)) = (
        std::env::var_os("CHAJA_BENCH_INDEX"),
        std::env::var_os("CHAJA_BENCH_MANIFEST"),
    ) else {
        eprintln!("set CHAJA_BENCH_INDEX and CHAJA_BENCH_MANIFEST (see the file's doc)");
        return;
    };
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(manifest).expect("manifest readable"))
            .expect("manifest parses");
    let index = SearchIndex::open_or_create(std::path::Path::new(&dir), &chaja_demo::sources())
        .expect("index opens");
    let generation = index.live();
    let mut group = c.benchmark_group("top10_exact_total");
    for (class, word) in manifest.representatives() {
        let request = Request::newest_first(parse_query(&word.keyword), 10);
        let total = search(&generation, &request).expect("search").total;
        assert_eq!(
            total, word.rows,
            "{class}: the manifest and the index disagree"
        );
        group.bench_function(format!("{class}: {}", word.keyword), |b| {
            b.iter(|| black_box(search(&generation, &request).expect("search")))
        });
    }
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
