//! The search cache: what is served from it, how fresh, and without Redis;
//! admission, the Redis breaker, the cross-replica recompute lock, and
//! trending keywords.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use chaja_mirror::Progress;
use chaja_search::cache::{Answer, CacheSettings, RedisTier, SearchCache};
use chaja_search::trending::{Trend, Trending, Window};

use crate::both_stores;
use crate::helpers::{redis_url, spawn_app_with, wait_until, RedisServer, Store, TestApp};
use crate::http_client::{Method, StatusCode};

both_stores!(
    answers_are_cached_until_the_index_moves,
    stale_answers_are_served_only_within_the_bound,
    redis_keeps_answers_across_a_restart,
    searches_answer_when_redis_is_unreachable,
);

async fn answers_are_cached_until_the_index_moves(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.cache.redis_url = Some(redis_url());
        a.cache.max_stale = std::time::Duration::from_millis(0);
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "캐시 질문", "본문").await;
    app.wait_indexed().await;
    let first = app.search("캐시", "").await;
    assert_eq!(first["cache"]["hit"], false);
    let second = app.search("캐시", "").await;
    assert_eq!(second["cache"]["hit"], true);
    assert_eq!(second["hits"], first["hits"]);
    // Other parameters are other answers.
    assert_eq!(
        app.search("캐시", "&type=review").await["cache"]["hit"],
        false
    );

    // A write moves the index past the cached watermark: recomputed at once.
    app.create_question(user, "두 번째 캐시", "본문").await;
    app.wait_indexed().await;
    let third = app.search("캐시", "").await;
    assert_eq!(third["cache"]["hit"], false);
    assert_eq!(third["total"], 2);
    assert_eq!(app.search("캐시", "").await["cache"]["hit"], true);
    app.finish().await;
}

async fn stale_answers_are_served_only_within_the_bound(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.cache.max_stale = std::time::Duration::from_millis(60_000)
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "신선도", "본문").await;
    app.wait_indexed().await;
    assert_eq!(app.search("신선도", "").await["total"], 1);
    app.create_question(user, "신선도 2", "본문").await;
    app.wait_indexed().await;
    // Within the stated bound the old answer may be served, and says so.
    let stale = app.search("신선도", "").await;
    assert_eq!(
        (stale["cache"]["hit"].as_bool(), stale["total"].as_u64()),
        (Some(true), Some(1))
    );
    assert!(stale["cache"]["age_ms"].as_i64().unwrap() < 60_000);
    app.finish().await;
}

async fn redis_keeps_answers_across_a_restart(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.cache.redis_url = Some(redis_url());
        a.cache.max_stale = std::time::Duration::from_millis(60_000);
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "공유 캐시", "본문").await;
    app.wait_indexed().await;
    let before = app.search("공유", "").await;
    assert_eq!(before["cache"]["hit"], false);
    // Asked for twice, so hot: written to Redis (off the request path).
    assert_eq!(app.search("공유", "").await["cache"]["hit"], true);
    let prefix = app.args.cache.cache_prefix.clone();
    wait_until(
        Duration::from_secs(30),
        "the answer never reached redis",
        || async { redis_keys(&prefix, "search:v5:").await.len() == 1 },
    )
    .await;
    // A new process has an empty L1; the answer comes from Redis, younger
    // than max_stale. (Index versions are never shared between processes.)
    let app = app.restart().await;
    let after = app.search("공유", "").await;
    assert_eq!(after["cache"]["hit"], true);
    assert_eq!(after["hits"], before["hits"]);
    app.finish().await;
}

async fn searches_answer_when_redis_is_unreachable(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.cache.redis_url = Some("redis://127.0.0.1:1".to_owned());
        a.cache.max_stale = std::time::Duration::from_millis(0);
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "레디스 없이", "본문").await;
    app.wait_indexed().await;
    let first = app.search("레디스", "").await;
    assert_eq!(
        (first["total"].as_u64(), first["cache"]["hit"].as_bool()),
        (Some(1), Some(false))
    );
    // L1 still works.
    assert_eq!(app.search("레디스", "").await["cache"]["hit"], true);
    app.finish().await;
}

/// Redis keys under `{prefix}:{kind}`, found with SCAN as chaja never uses KEYS.
async fn redis_keys(prefix: &str, kind: &str) -> Vec<String> {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:{kind}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// A hot key survives a flood of one-off queries in L1, and none of the
/// flood reaches Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unique_queries_evicts_no_hot_key_and_stays_out_of_redis() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.cache.redis_url = Some(redis_url());
        a.cache.l1 = 1 << 20;
        a.cache.max_stale = std::time::Duration::from_millis(600_000);
    })
    .await;
    let user = app.create_user("u").await;
    // Every k-number matches all ten rows: each flood answer weighs ~3 KB,
    // so 1 MiB holds a few hundred of them.
    let words: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
    for n in 0..10 {
        let content = format!("인기 {n} {}", words.join(" "));
        app.create_question(user, &format!("제목 {n}"), &content)
            .await;
    }
    app.wait_indexed().await;
    for _ in 0..20 {
        app.search("인기", "").await;
    }
    let computed = app.state.search.cache.computations();
    let flood = futures::stream::iter(words.iter().map(|w| app.search(w, "")));
    let answers: Vec<Value> =
        futures::StreamExt::collect(futures::StreamExt::buffer_unordered(flood, 8)).await;
    assert!(answers.iter().all(|a| a["total"] == 10));
    assert_eq!(app.state.search.cache.computations(), computed + 1000);

    let hot = app.search("인기", "").await;
    assert_eq!(hot["cache"]["hit"], true, "the hot key was evicted");
    assert_eq!(app.state.search.cache.computations(), computed + 1000);
    let prefix = app.args.cache.cache_prefix.clone();
    assert_eq!(redis_keys(&prefix, "search:v5:").await.len(), 1);
    app.finish().await;
}

async fn redis_state(app: &TestApp) -> String {
    let (_, body) = app.get("/readyz").await;
    body["redis"].as_str().unwrap_or_default().to_owned()
}

/// Redis dies in the middle of a search load: every search still answers
/// 200, the breaker opens, and once Redis is back it closes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_under_load_opens_the_breaker_and_searches_go_on() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let app = Arc::new(
        spawn_app_with(Store::Sqlite, |a| {
            a.cache.redis_url = Some(url);
            a.cache.max_stale = std::time::Duration::from_millis(0);
        })
        .await,
    );
    let user = app.create_user("u").await;
    let words: Vec<String> = (0..50).map(|i| format!("w{i}")).collect();
    app.create_question(user, "부하", &words.join(" ")).await;
    app.wait_indexed().await;
    // Four clients search without pause, each request a new cache key (the
    // author filter is part of it), so every one misses L1 and asks Redis.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load: Vec<_> = (0..4)
        .map(|c| {
            let (app, stop) = (app.clone(), stop.clone());
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                let mut n = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let q = format!("w{} 부하", (n * 4 + c) % 50);
                    let author = n * 4 + c;
                    let (status, _) = app
                        .get(&format!("/api/search?q={q}&attr.author_id={author}"))
                        .await;
                    statuses.push(status.as_u16());
                }
                statuses
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.stop();
    wait_until(
        Duration::from_secs(30),
        "the breaker never opened",
        || async { redis_state(&app).await == "open" },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _redis = RedisServer::start_on(redis.port);
    wait_until(
        Duration::from_secs(30),
        "the breaker never closed",
        || async { redis_state(&app).await == "closed" },
    )
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut statuses = Vec::new();
    for task in load {
        statuses.extend(task.await.unwrap());
    }
    assert!(statuses.len() > 100, "only {} searches ran", statuses.len());
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    Arc::into_inner(app).unwrap().finish().await;
}

fn answer(watermark: i64) -> Answer {
    Answer {
        by_source: vec![1, 0],
        hits: Vec::new(),
        ranks: Vec::new(),
        facets: Vec::new(),
        more: false,
        watermark,
        computed_at_ms: chaja_core::clock::now_ms(),
        snapshot: None,
    }
}

/// Two replicas sharing Redis: when a hot key expires on both, one of them
/// recomputes it and every other request, on either, gets the stale answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_replicas_one_recomputes_an_expired_key() {
    one_recompute_across_replicas(&redis_url()).await;
}

/// The answer cache's recompute lock and trending on a 3-master Redis
/// Cluster: the same checks as on one node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_and_trending_on_a_redis_cluster() {
    let cluster = crate::helpers::RedisCluster::start(3, 0);
    let url = cluster.url();
    one_recompute_across_replicas(&url).await;
    let tier = || {
        let prefix = format!("chaja-test-{:016x}", rand::random::<u64>());
        RedisTier::new(&url, &prefix, Duration::from_millis(200)).unwrap()
    };
    trending_windows(Trending::new(Some(tier()), 2, 1)).await;
    trending_caps_each_client(Trending::new(Some(tier()), 2, 1)).await;
}

/// Whether the L2 answer of `key` under `prefix` is in Redis at `url`
/// (one node or a cluster: `redis-cli -c` follows the slot).
fn in_l2(url: &str, prefix: &str, key: &str) -> bool {
    let port = url
        .rsplit(',')
        .next()
        .and_then(|node| node.rsplit(':').next())
        .unwrap();
    let output = std::process::Command::new("redis-cli")
        .args([
            "-c",
            "-p",
            port,
            "exists",
            &format!("{prefix}:search:v5:{key}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim() == "1"
}

async fn one_recompute_across_replicas(url: &str) {
    let prefix = format!("chaja-test-{:016x}", rand::random::<u64>());
    // Answers from the other replica are fresh by age only (index versions
    // are per process): young enough for b's first read, expired later.
    let max_stale = Duration::from_millis(1500);
    let settings = CacheSettings {
        max_stale,
        grace: Duration::from_secs(60),
        l1_bytes: 1 << 20,
    };
    let replica = || {
        let progress = Arc::new(Progress::default());
        let redis = RedisTier::new(url, &prefix, Duration::from_millis(200)).unwrap();
        (
            SearchCache::new(Some(redis), settings, progress.version_handle()),
            progress,
        )
    };
    let (a, a_progress) = replica();
    let (b, b_progress) = replica();
    // The recompute finishes only when the test says so.
    let release = Arc::new(tokio::sync::Semaphore::new(1_000));
    let get = |cache: SearchCache, release: Arc<tokio::sync::Semaphore>| async move {
        let (answer, status) = cache
            .get_or_compute(&hot(), |w| async move {
                release.acquire().await.unwrap().forget();
                Ok(answer(w))
            })
            .await
            .unwrap();
        (answer.watermark, status)
    };
    // Warm: computed on a, hot, so in Redis; b finds it there.
    get(a.clone(), release.clone()).await;
    get(a.clone(), release.clone()).await;
    wait_until(
        Duration::from_secs(30),
        "the answer never reached redis",
        || async { in_l2(url, &prefix, hot().as_str()) },
    )
    .await;
    assert!(get(b.clone(), release.clone()).await.1.hit);
    assert_eq!((a.computations(), b.computations()), (1, 0));

    // Both indexes move on and the cached answers pass max_stale. The one
    // recompute is held until the other 199 requests have been answered.
    release.forget_permits(1_000);
    a_progress.changed();
    b_progress.changed();
    tokio::time::sleep(max_stale).await;
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..100 {
        requests.spawn(get(a.clone(), release.clone()));
        requests.spawn(get(b.clone(), release.clone()));
    }
    let mut stale = 0;
    for _ in 0..199 {
        let answered = tokio::time::timeout(Duration::from_secs(30), requests.join_next());
        let (_, status) = answered
            .await
            .expect("199 answers without the recompute")
            .unwrap()
            .unwrap();
        stale += usize::from(status.stale);
    }
    assert_eq!(stale, 199);
    release.add_permits(1_000);
    let (watermark, status) = requests.join_next().await.unwrap().unwrap();
    assert!(!status.stale);
    assert!([a_progress.version(), b_progress.version()].contains(&watermark));
    assert_eq!(
        a.computations() + b.computations(),
        2,
        "one recompute in all"
    );
    // Both now serve the new answer, from L1 or from Redis.
    assert_eq!(get(a.clone(), release.clone()).await.0, watermark);
    assert_eq!(get(b.clone(), release.clone()).await.0, watermark);
    assert_eq!(a.computations() + b.computations(), 2);
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Trending counts per window with explicit times: in-process and in Redis.
async fn trending_windows(trending: Trending) {
    let now = chaja_core::clock::now_ms();
    let minute = 60_000;
    trending.record_at("오래된 글", ip("10.0.0.1"), now - 120 * minute);
    trending.record_at("한 시간 안", ip("10.0.0.1"), now - 30 * minute);
    trending.record_at("방금", ip("10.0.0.1"), now - minute);
    trending.record_at("방금", ip("10.0.0.2"), now - minute);
    trending.flush().await;
    let names = |top: Vec<Trend>| -> Vec<(String, u64)> {
        top.into_iter().map(|t| (t.keyword, t.count)).collect()
    };
    let top = |w: Window| {
        let trending = trending.clone();
        async move { names(trending.top_at(w, 10, now).await.unwrap()) }
    };
    assert_eq!(top(Window::TenMinutes).await, [("방금".to_owned(), 2)]);
    assert_eq!(
        top(Window::Hour).await,
        [("방금".to_owned(), 2), ("한 시간 안".to_owned(), 1)]
    );
    assert_eq!(top(Window::Day).await.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_windows_in_process() {
    trending_windows(Trending::new(None, 2, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_windows_in_redis() {
    let prefix = format!("chaja-test-{:016x}", rand::random::<u64>());
    let redis = RedisTier::new(&redis_url(), &prefix, Duration::from_millis(200)).unwrap();
    trending_windows(Trending::new(Some(redis), 2, 1)).await;
}

/// One client sending many distinct queries adds at most 30 keywords to a
/// bucket; other clients still count.
async fn trending_caps_each_client(trending: Trending) {
    let now = chaja_core::clock::now_ms();
    for i in 0..100 {
        trending.record_at(&format!("스팸 {i:03}"), ip("10.9.9.9"), now);
    }
    trending.record_at("정상 검색", ip("10.0.0.1"), now);
    trending.flush().await;
    let top = trending.top_at(Window::TenMinutes, 100, now).await.unwrap();
    assert_eq!(top.len(), 31, "{top:?}");
    assert!(top.iter().any(|t| t.keyword == "정상 검색"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_caps_each_client_in_process() {
    trending_caps_each_client(Trending::new(None, 2, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_caps_each_client_in_redis() {
    let prefix = format!("chaja-test-{:016x}", rand::random::<u64>());
    let redis = RedisTier::new(&redis_url(), &prefix, Duration::from_millis(200)).unwrap();
    trending_caps_each_client(Trending::new(Some(redis), 2, 1)).await;
}

/// Over HTTP, from several client addresses: ranks, once per client, first
/// pages only, and no keyword shorter than two characters.
async fn trending_over_http(redis: bool) {
    let app = spawn_app_with(Store::Sqlite, |a| {
        if redis {
            a.cache.redis_url = Some(redis_url());
        }
    })
    .await;
    // Only searches that find something count.
    let user = app.create_user("u").await;
    app.create_question(user, "스프링 질문", "도커와 docker, 자바와 a")
        .await;
    app.wait_indexed().await;
    let client = |addr: &str| {
        crate::http_client::Client::builder()
            .local_address(ip(addr))
            .build()
            .unwrap()
    };
    let (a, b, c) = (
        client("127.0.0.2"),
        client("127.0.0.3"),
        client("127.0.0.4"),
    );
    let search = |client: &crate::http_client::Client, q: &str, extra: &str| {
        let url = app.url(&format!("/api/search?q={q}{extra}"));
        let request = client.get(url).send();
        async move { assert_eq!(request.await.unwrap().status(), 200) }
    };
    for _ in 0..5 {
        search(&a, "스프링", "").await;
    }
    search(&a, "도커", "").await;
    search(&b, "스프링", "").await;
    // Normalized: full width and upper case count as the same keyword.
    search(&b, "ＤＯＣＫＥＲ", "").await;
    search(&c, "docker", "").await;
    search(&c, "도커", "").await;
    search(&b, "도커", "").await;
    search(&c, "자바", "").await;
    // Later pages are the same search, not a new one.
    search(&a, "자바", "&page=2").await;
    search(&b, "자바", "&page=2").await;
    // Too short to list, and nothing found.
    for client in [&a, &b, &c] {
        search(client, "a", "").await;
        search(client, "없는말", "").await;
    }
    app.state.search.trending.flush().await;
    let (status, body) = app.get("/api/search/trending?window=1h&limit=10").await;
    assert_eq!(status, 200);
    let expected = serde_json::json!([
        {"keyword": "도커", "count": 3},
        {"keyword": "스프링", "count": 2},
        {"keyword": "docker", "count": 2},
        {"keyword": "자바", "count": 1},
    ]);
    assert_eq!(body["keywords"], expected);
    // A filtered search that found nothing says nothing about the content.
    search(&a, "스프링", "&attr.author_id=999999").await;
    search(
        &a,
        "스프링",
        "&from=1990-01-01T00:00:00Z&to=1990-01-02T00:00:00Z",
    )
    .await;
    // What found nothing is counted apart (`a` is too short to list).
    app.state.search.zero_results.flush().await;
    let (status, zero) = app.get("/api/search/zero-results?window=24h").await;
    assert_eq!(status, 200);
    assert_eq!(
        zero["keywords"],
        serde_json::json!([{"keyword": "없는말", "count": 3}])
    );
    let (_, top1) = app.get("/api/search/trending?limit=1").await;
    assert_eq!(
        top1["keywords"],
        serde_json::json!([{"keyword": "도커", "count": 3}])
    );
    for bad in ["window=2h", "limit=0", "limit=101", "window="] {
        let (status, body) = app.get(&format!("/api/search/trending?{bad}")).await;
        assert_eq!(status, 400, "{bad}");
        assert!(body["error"]["code"].is_string());
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_over_http_in_process() {
    trending_over_http(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_over_http_in_redis() {
    trending_over_http(true).await;
}

/// The key of a first page for the query `hot`.
fn hot() -> chaja_index::search::SearchKey {
    let request =
        chaja_index::search::Request::newest_first(chaja_core::text::parse_query("hot"), 10);
    chaja_index::search::SearchKey::first_page(&request)
}

/// A client varying `size` makes no new cache key: sizes up to 10 are
/// served from one answer computed at 10, each page the first hits of it,
/// with its own cursor. (Each size was a key and a search of its own.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smaller_pages_are_served_from_one_cached_answer() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.cache.max_stale = Duration::from_secs(60)
    })
    .await;
    let user = app.create_user("u").await;
    for i in 0..15 {
        app.create_question(user, &format!("크기 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    let full = app.search("크기", "&size=10").await;
    let computed = app.state.search.cache.computations();
    for size in [1, 3, 5, 9] {
        let page = app.search("크기", &format!("&size={size}")).await;
        assert_eq!(page["total"], 15);
        assert_eq!(
            page["hits"].as_array().unwrap()[..],
            full["hits"].as_array().unwrap()[..size],
            "size {size}"
        );
        // Its cursor continues right after its own last hit.
        let cursor = page["next_cursor"].as_str().expect("more follow");
        let next = app
            .search("크기", &format!("&size={size}&cursor={cursor}"))
            .await;
        assert_eq!(next["hits"][0], full["hits"][size], "size {size}");
    }
    assert_eq!(app.state.search.cache.computations(), computed);
    // The last page of a bucket that holds every hit has no cursor.
    let all = app.search("크기", "&size=20").await;
    assert_eq!(all["hits"].as_array().unwrap().len(), 15);
    assert!(all["next_cursor"].is_null(), "{}", all["next_cursor"]);
    app.finish().await;
}

/// A keyword trends only once `CHAJA_TRENDING_MIN_CLIENTS` (3) distinct
/// clients searched it; searches that carry the admin key, or come from
/// `CHAJA_TRENDING_EXCLUDE`, are never counted. (One load test from one
/// address filled the list with fragments of its queries.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trending_needs_clients_and_skips_the_operators() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.cache.trending_min_clients = 3;
        a.cache.trending_exclude = "198.51.100.0/24".parse().unwrap();
        a.keys.admin_key = Some("operator".into());
        a.limits.trusted_proxies = "127.0.0.1".parse().unwrap();
    })
    .await;
    let user = app.create_user("u").await;
    for word in ["두명만", "관리자만", "제외만", "셋이서"] {
        app.create_question(user, &format!("{word} 찾는 글"), "본문")
            .await;
    }
    app.wait_indexed().await;
    let search = |q: &'static str, client: &'static str, key: Option<&'static str>| {
        let path = format!("/api/search?q={}", crate::helpers::urlencode(q));
        let mut request = app.forwarded(Method::GET, &path, client);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
        }
    };
    for client in ["203.0.113.1", "203.0.113.2"] {
        search("두명만", client, None).await;
    }
    for client in ["203.0.113.1", "203.0.113.2", "203.0.113.3"] {
        search("관리자만", client, Some("operator")).await;
        search("셋이서", client, None).await;
    }
    for client in ["198.51.100.1", "198.51.100.2", "198.51.100.3"] {
        search("제외만", client, None).await;
    }
    app.state.search.trending.flush().await;
    let (_, body) = app.get("/api/search/trending?window=1h").await;
    let keywords: Vec<&str> = body["keywords"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["keyword"].as_str().unwrap())
        .collect();
    assert_eq!(keywords, ["셋이서"], "{body}");
    assert_eq!(body["keywords"][0]["count"], 3);
    app.finish().await;
}
