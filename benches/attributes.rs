//! Facets, ranges and sorting by an attribute, each beside the same kind
//! of query without it, every query the first of its kind in the process.
//!
//! Queries are cut from the stored rows by the load tester's sampler (2, 3
//! and 4 characters, two words) and dealt round-robin to five variants, so
//! that each variant gets a fresh sample of one distribution and no query
//! runs twice: plain newest first; `facets=rating`; `attr.rating.gte=4`;
//! `sort=attr.like_count.desc` (first page); and the same sort's page
//! after 500 hits by cursor (the cursor is found by an untimed search
//! first, which leaves that query's totals known). A sixth group repeats
//! the comparison for single characters found in 20–40% of the rows (from
//! document frequencies, without searching), the issue's "keyword in 30%
//! of rows". Each query runs in process (no HTTP), one at a time, the
//! variants interleaved, against an index built by `chaja reindex` of the
//! demo's sources and read into the page cache first.
//!
//! Run:
//! `CHAJA_BENCH_DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench100k \
//!  CHAJA_BENCH_INDEX=/path/to/index CHAJA_KO_DIC=data/ko-dic \
//!  cargo bench --bench attributes`
//! (`CHAJA_BENCH_QUERIES`: queries per variant, default 200;
//! `CHAJA_BENCH_SHOW_SLOW=1` prints each query over 10 ms.)

use std::time::{Duration, Instant};

use chaja_core::text::{parse_query, Keyword};
use chaja_index::search::{search, AttrOrder, NumberRange, Request, Sort};
use chaja_index::{Generation, SearchIndex};
use chaja_loadtest::longtail::{Class, Sampler};
use chaja_store::Db;
use sqlx::Row;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Plain,
    Facet,
    Range,
    SortFirst,
    SortDeep,
}

const VARIANTS: [Variant; 5] = [
    Variant::Plain,
    Variant::Facet,
    Variant::Range,
    Variant::SortFirst,
    Variant::SortDeep,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Plain => "plain (newest first)",
            Variant::Facet => "+ facets=rating",
            Variant::Range => "+ attr.rating.gte=4",
            Variant::SortFirst => "sort=attr.like_count.desc, first page",
            Variant::SortDeep => "sort=attr.like_count.desc, page after 500 by cursor",
        }
    }

    /// The request to time, after any untimed preparation.
    fn request(self, generation: &Generation, q: &str) -> Request {
        let mut r = Request::newest_first(parse_query(q), 10);
        match self {
            Variant::Plain => {}
            Variant::Facet => r.facets = vec!["rating".to_owned()],
            Variant::Range => {
                r.filter.ranges = vec![NumberRange {
                    name: "rating".to_owned(),
                    gte: Some(4.0),
                    lte: None,
                }]
            }
            Variant::SortFirst | Variant::SortDeep => {
                r.sort = Sort::Attribute(AttrOrder {
                    name: "like_count".to_owned(),
                    descending: true,
                })
            }
        }
        if self == Variant::SortDeep {
            let walk = Request {
                limit: 500,
                ..r.clone()
            };
            let page = search(generation, &walk).expect("search");
            r.after = page.hits.last().map(|h| h.rank);
        }
        r
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn row(group: &str, variant: Variant, times: &mut [Duration], share: f64) {
    if times.is_empty() {
        return;
    }
    times.sort();
    let at = |p: f64| ms(times[((times.len() as f64 * p) as usize).min(times.len() - 1)]);
    println!(
        "| {group} | {} | {} | {:.1}% | {:.2} | {:.2} | {:.2} | {:.2} |",
        variant.name(),
        times.len(),
        share * 100.0,
        at(0.5),
        at(0.9),
        at(0.99),
        ms(*times.last().expect("not empty")),
    );
}

/// Times each query of `queries` once, query `i` under variant `i mod 5`:
/// interleaved, so that whatever warms up during the run (the page cache,
/// the allocator) is shared by every variant alike.
fn run(generation: &Generation, group: &str, queries: &[String]) {
    let docs = generation.num_docs().max(1) as f64;
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); VARIANTS.len()];
    let mut shares = vec![0.0; VARIANTS.len()];
    for (i, q) in queries.iter().enumerate() {
        let v = i % VARIANTS.len();
        let request = VARIANTS[v].request(generation, q);
        if VARIANTS[v] == Variant::SortDeep && request.after.is_none() {
            continue; // fewer than 500 matches: no page after 500
        }
        let started = Instant::now();
        let response = search(generation, &request).expect("search");
        let took = started.elapsed();
        times[v].push(took);
        shares[v] += response.total as f64 / docs;
        if std::env::var_os("CHAJA_BENCH_SHOW_SLOW").is_some() && took > Duration::from_millis(10) {
            eprintln!(
                "slow: {:.1} ms {} {q:?} total {}",
                ms(took),
                VARIANTS[v].name(),
                response.total
            );
        }
    }
    for (v, variant) in VARIANTS.iter().enumerate() {
        let n = times[v].len().max(1) as f64;
        row(group, *variant, &mut times[v], shares[v] / n);
    }
}

#[tokio::main]
async fn main() {
    let url = std::env::var("CHAJA_BENCH_DATABASE_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/chaja_bench".to_owned());
    let dir = std::env::var("CHAJA_BENCH_INDEX")
        .expect("CHAJA_BENCH_INDEX: an index built by chaja reindex");
    let per_variant = env_usize("CHAJA_BENCH_QUERIES", 200);
    let ko_dic = std::env::var("CHAJA_KO_DIC")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/data/ko-dic").to_owned());
    chaja_index::morph::init(std::path::Path::new(&ko_dic));
    let db = Db::connect_lazy(&url, 2).expect("database url");
    let rows = sqlx::query("SELECT title, content FROM questions ORDER BY RAND(2) LIMIT 2000")
        .fetch_all(&db.pool)
        .await
        .expect("questions readable");
    let texts: Vec<String> = rows
        .iter()
        .map(|r| {
            let text = |i: usize| {
                r.try_get::<String, _>(i).unwrap_or_else(|_| {
                    String::from_utf8_lossy(&r.get::<Vec<u8>, _>(i)).into_owned()
                })
            };
            format!("{} {}", text(0), text(1))
        })
        .collect();

    let index = SearchIndex::open_or_create(std::path::Path::new(&dir), &chaja_demo::sources())
        .expect("open index");
    let generation = index.live();
    let docs = generation.num_docs();
    // Read into the page cache first, as the server does before it says
    // ready: the first queries would otherwise pay for the disk.
    chaja_index::warm::warm(
        &generation.path,
        chaja_index::warm::default_budget(),
        &|| true,
    )
    .expect("warm the index");
    // And build the per-segment arrays, as the server does before ready.
    generation.prime().expect("build the per-segment arrays");
    let mut sampler = Sampler::new(texts.clone());
    let mut rng = rand::rng();
    let wanted = per_variant * VARIANTS.len();
    let mut sampled: Vec<String> = Vec::new();
    while sampled.len() < wanted {
        let Some((class, q)) = sampler.next(&mut rng) else {
            break;
        };
        if matches!(class, Class::Chars(2..=4) | Class::And) {
            sampled.push(q);
        }
    }

    // Characters in 20–40% of the documents, by document frequency of the
    // `chars` field: no search runs to find them.
    let searcher = generation.reader.searcher();
    let mut candidates: Vec<char> = texts.iter().flat_map(|t| t.chars()).collect();
    candidates.sort_unstable();
    candidates.dedup();
    let mut frequent: Vec<String> = Vec::new();
    for c in candidates {
        if !('가'..='힣').contains(&c) {
            continue;
        }
        let keyword = Keyword(c.to_string());
        let term = tantivy::Term::from_field_text(generation.fields.chars, keyword.as_str());
        let df = searcher.doc_freq(&term).unwrap_or(0) as f64 / docs.max(1) as f64;
        if (0.2..=0.4).contains(&df) {
            frequent.push(keyword.0);
        }
    }

    println!(
        "{docs} documents in {dir}; every query is its first run in this process ({} sampled, {} frequent characters)\n",
        sampled.len(),
        frequent.len()
    );
    println!("| queries | variant | n | mean share | p50 ms | p90 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|---|---|");
    run(&generation, "2–4 chars, two words", &sampled);
    run(&generation, "a character in 20–40% of rows", &frequent);
}
