//! First-query latency: every query one the process has never seen, cut
//! from the stored rows, by class, with `LIKE` beside it.
//!
//! A keyword list is soon cached (its answers and its per-segment totals),
//! so this bench never repeats a query: each is the first of its kind, the
//! long tail's cost. Classes: substrings of 1, 2, 3, 4 and 5–8 characters,
//! two words ANDed, quoted two-word phrases (from `loadtest::longtail`,
//! which the `longtail` load test also uses); two words under
//! `sort=relevance`, under `sort=relevance&match=morph` and under
//! `match=morph`; and the filters: a random date range alone, a frequent
//! keyword with a random date range, `type`, `author_id`. Each query runs
//! in process (no HTTP), one at a time, against an index built by
//! `chaja reindex`, after reading it into the page cache as `serve` does
//! before it says ready. The slowest queries are listed with their place
//! in the run: a tail at its start is a cold cost.
//!
//! Run:
//! `CHAJA_BENCH_DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench100k \
//!  CHAJA_BENCH_INDEX=/path/to/index CHAJA_KO_DIC=data/ko-dic \
//!  cargo bench --bench first_query`
//! (`CHAJA_BENCH_QUERIES`: queries per class, default 200;
//! `CHAJA_BENCH_LIKE`: `LIKE` samples per class, default 3;
//! `CHAJA_BENCH_CLASSES`: only the classes whose names contain it;
//! `CHAJA_BENCH_SEED`: a number, for the same queries in every run.)

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chaja_core::sources::SourceId;
use chaja_core::text::parse_query;
use chaja_index::search::{search, Filter, Request, Sort};
use chaja_index::SearchIndex;
use chaja_loadtest::longtail::{Class, Sampler};
use chaja_store::Db;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
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
    let per_class = env_usize("CHAJA_BENCH_QUERIES", 200);
    let like_samples = env_usize("CHAJA_BENCH_LIKE", 3);
    let ko_dic = std::env::var("CHAJA_KO_DIC")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/data/ko-dic").to_owned());
    chaja_index::morph::init(std::path::Path::new(&ko_dic));
    let db = Db::connect_lazy(&url, 2).expect("database url");

    // Texts to cut queries from, and the time span and authors of the rows.
    let rows = sqlx::query("SELECT title, content FROM questions ORDER BY RAND(1) LIMIT 2000")
        .fetch_all(&db.pool)
        .await
        .expect("questions readable");
    let texts: Vec<String> = rows
        .iter()
        .map(|r| {
            // MEDIUMTEXT reaches sqlx's `Any` driver as bytes, VARCHAR as text.
            let text = |i: usize| {
                r.try_get::<String, _>(i).unwrap_or_else(|_| {
                    String::from_utf8_lossy(&r.get::<Vec<u8>, _>(i)).into_owned()
                })
            };
            format!("{} {}", text(0), text(1))
        })
        .collect();
    let span =
        sqlx::query("SELECT MIN(created_at), MAX(created_at), MAX(author_id) FROM questions")
            .fetch_one(&db.pool)
            .await
            .expect("span");
    let (oldest, newest, authors): (i64, i64, i64) = (span.get(0), span.get(1), span.get(2));

    let index = SearchIndex::open_or_create(std::path::Path::new(&dir), &chaja_demo::sources())
        .expect("open index");
    let generation = index.live();
    let docs = generation.num_docs().max(1);
    // What `serve` does before `/readyz` says ready: read the index into
    // the page cache, so that these are a ready server's first queries.
    let warmed = chaja_index::warm::warm(
        &generation.path,
        chaja_index::warm::default_budget(),
        &|| true,
    )
    .expect("warm the index");
    println!(
        "read {} MB of index into the page cache first, as serve does",
        warmed.bytes >> 20
    );
    let mut sampler = Sampler::new(texts);
    // `CHAJA_BENCH_SEED`: the same queries in every run, for A/B pairs.
    let mut rng = match std::env::var("CHAJA_BENCH_SEED") {
        Ok(seed) => StdRng::seed_from_u64(seed.parse().expect("CHAJA_BENCH_SEED: a number")),
        Err(_) => StdRng::from_os_rng(),
    };

    // Queries by class, none repeated.
    let mut classes: BTreeMap<&'static str, Vec<(String, Request)>> = BTreeMap::new();
    let mut words: Vec<String> = Vec::new();
    while classes.values().map(Vec::len).sum::<usize>() < per_class * 7 {
        let Some((class, q)) = sampler.next(&mut rng) else {
            break;
        };
        if class == Class::And {
            words.push(q.clone());
        }
        let list = classes.entry(class.name()).or_default();
        if list.len() < per_class {
            list.push((q.clone(), Request::newest_first(parse_query(&q), 10)));
        }
    }
    let short: Vec<String> = [
        "longtail: 2 chars",
        "longtail: 3 chars",
        "longtail: 4 chars",
    ]
    .iter()
    .flat_map(|c| classes.get(c).into_iter().flatten().map(|(q, _)| q.clone()))
    .collect();
    let two_words = |rng: &mut StdRng| words.choose(rng).cloned();
    let mut add =
        |name: &'static str, make: &mut dyn FnMut(&mut StdRng) -> Option<(String, Request)>| {
            let mut list = Vec::new();
            for _ in 0..per_class * 4 {
                if list.len() == per_class {
                    break;
                }
                if let Some(q) = make(&mut rng) {
                    list.push(q);
                }
            }
            classes.insert(name, list);
        };
    let mut seen = std::collections::HashSet::new();
    let mut fresh = |q: &str, tag: &str| seen.insert(format!("{tag}{q}"));
    for (name, sort, morph) in [
        ("relevance: two words", Sort::Relevance, false),
        ("relevance + morph: two words", Sort::Relevance, true),
        ("morph, newest: two words", Sort::Recent, true),
    ] {
        add(name, &mut |rng| {
            let q = two_words(rng)?;
            fresh(&q, name).then(|| {
                let mut r = Request::newest_first(parse_query(&q), 10);
                r.sort = sort.clone();
                r.morph = morph;
                r.now = chaja_core::clock::now_ms();
                (q, r)
            })
        });
    }
    let range = |rng: &mut StdRng| {
        let a = rng.random_range(oldest..=newest);
        let b = rng.random_range(oldest..=newest);
        (a.min(b), a.max(b))
    };
    for (name, frequent) in [
        ("filter: 2-4 chars + date range", false),
        ("filter: frequent + date range", true),
    ] {
        add(name, &mut |rng| {
            let q = if frequent {
                ["이", "니다", "습니다", "있습니다"]
                    .choose(rng)?
                    .to_string()
            } else {
                short.choose(rng)?.clone()
            };
            let (from, to) = range(rng);
            let mut r = Request::newest_first(parse_query(&q), 10);
            r.filter = Filter {
                from: Some(from),
                to: Some(to),
                ..Filter::default()
            };
            Some((format!("{q} {from}..{to}"), r))
        });
    }
    add("filter: two words + type", &mut |rng| {
        let q = two_words(rng)?;
        fresh(&q, "t").then(|| {
            let mut r = Request::newest_first(parse_query(&q), 10);
            // The demo's sources: 0 is `question`, 1 is `review`.
            r.filter.source = Some(SourceId::from_index(usize::from(rng.random_bool(0.5))));
            (q, r)
        })
    });
    add("filter: two words + author", &mut |rng| {
        let q = two_words(rng)?;
        fresh(&q, "a").then(|| {
            let mut r = Request::newest_first(parse_query(&q), 10);
            let author: i64 = rng.random_range(1..=authors.max(1));
            r.filter.attributes = vec![("author_id".to_owned(), author.to_string())];
            (q, r)
        })
    });

    // `CHAJA_BENCH_CLASSES`: only the classes whose names contain it.
    if let Ok(only) = std::env::var("CHAJA_BENCH_CLASSES") {
        classes.retain(|name, _| name.contains(only.as_str()));
    }
    println!("{docs} documents in {dir}; every query below is its first run in this process\n");
    println!("| class | queries | mean share | p50 ms | p90 ms | p99 ms | max ms | LIKE ms (median of {like_samples}) |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut all = Vec::new();
    let mut rows_out = Vec::new();
    // The slowest queries, with their class and place in the run: a tail
    // at the start of the run is a cold cost, one anywhere else the query's.
    let mut slowest: Vec<(Duration, usize, &str, &str, u64)> = Vec::new();
    let mut place = 0;
    // chaja first, every class, while nothing else runs; then LIKE.
    for (name, queries) in &classes {
        let mut times = Vec::with_capacity(queries.len());
        let mut share = 0.0;
        for (q, request) in queries {
            let t = Instant::now();
            let response = search(&generation, request).expect("search");
            let took = t.elapsed();
            times.push(took);
            share += response.total as f64 / docs as f64;
            slowest.push((took, place, name, q, response.total));
            place += 1;
        }
        all.extend(times.iter().copied());
        rows_out.push((name, queries, times, share / queries.len().max(1) as f64));
    }
    for (name, queries, mut times, share) in rows_out {
        times.sort();
        let at = |p: f64| {
            ms(times[((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1))])
        };
        let mut like = Vec::new();
        for (q, request) in queries.iter().take(like_samples) {
            like.push(like_time(&db, q, request).await);
        }
        like.sort();
        let like = like
            .get(like.len() / 2)
            .map_or("-".to_owned(), |d| format!("{:.0}", ms(*d)));
        if times.is_empty() {
            continue;
        }
        println!(
            "| {name} | {} | {:.2}% | {:.2} | {:.2} | {:.2} | {:.2} | {like} |",
            times.len(),
            share * 100.0,
            at(0.5),
            at(0.9),
            at(0.99),
            ms(*times.last().expect("not empty")),
        );
    }
    slowest.sort_by_key(|entry| Reverse(entry.0));
    // The slowest 1% (15 at least): what the p99 over all classes is made of.
    let shown = (slowest.len() / 100).max(15);
    println!("\nthe slowest {shown} queries (place in the run, class, query, total):");
    for (took, place, class, q, total) in slowest.iter().take(shown) {
        println!("  {:8.2} ms  #{place:<5} {class}: {q} ({total})", ms(*took));
    }
    all.sort();
    let at = |p: f64| ms(all[((all.len() as f64 * p) as usize).min(all.len() - 1)]);
    println!(
        "\nall {} queries: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len(),
        at(0.5),
        at(0.99),
        ms(*all.last().expect("queries"))
    );
}

/// `LIKE` as the platforms run it for the same request: newest 10 plus a
/// count, per table the type filter allows, every keyword ANDed in title or
/// content, the other filters as plain conditions. (Morphology has no
/// `LIKE` form: its classes get the substring query's time.)
async fn like_time(db: &Db, _label: &str, request: &Request) -> Duration {
    let started = Instant::now();
    let author: Option<i64> = request
        .filter
        .attributes
        .iter()
        .find(|(name, _)| name == "author_id")
        .and_then(|(_, value)| value.parse().ok());
    for source in [0, 1] {
        if request.filter.source.is_some_and(|s| s.index() != source) {
            continue;
        }
        let is_question = source == 0;
        let (table, text) = if is_question {
            ("questions", "(title LIKE ? OR content LIKE ?)")
        } else {
            ("reviews", "content LIKE ?")
        };
        let mut conditions = vec![text; request.keywords.len()];
        if author.is_some() {
            conditions.push("author_id = ?");
        }
        if request.filter.from.is_some() {
            conditions.push("created_at >= ?");
        }
        if request.filter.to.is_some() {
            conditions.push("created_at <= ?");
        }
        let condition = conditions.join(" AND ");
        for sql in [
            format!("SELECT id FROM {table} WHERE {condition} ORDER BY created_at DESC, id DESC LIMIT 10"),
            format!("SELECT COUNT(*) FROM {table} WHERE {condition}"),
        ] {
            let mut query = sqlx::query(&sql);
            for k in &request.keywords {
                let pattern = format!("%{}%", k.as_str());
                query = query.bind(pattern.clone());
                if is_question {
                    query = query.bind(pattern);
                }
            }
            for value in [author, request.filter.from, request.filter.to]
                .into_iter()
                .flatten()
            {
                query = query.bind(value);
            }
            query.fetch_all(&db.pool).await.expect("LIKE query");
        }
    }
    started.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
