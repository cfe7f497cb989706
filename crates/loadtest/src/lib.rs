//! `chaja loadtest`: the load test users run against chaja, on goose.
//!
//! Five scenarios, as the platforms' own write-ups drive their services:
//! - `search`: keywords drawn from a mix of rare (70%), ~10% (25%) and
//!   frequent (5%) ones, 1 to 6 characters, some multi-word;
//! - `flow`: a user session: create a question, read it, create a review,
//!   read it, search, read the top 10 liked, write a comment;
//! - `mixed`: 90% searches, 10% writes whose row is then polled for until it
//!   is searchable, which measures write-to-searchable lag;
//! - `abuse`: half the users search as in `search`, the other half defeat
//!   every cache: random `from`/`to`, deep pages of 100, random order, each
//!   abuser under an address of its own in `X-Forwarded-For` (which counts
//!   when the server trusts the load generator as a proxy). The normal
//!   users' percentiles, beside a `search` run's, show what abusers cost;
//! - `longtail`: every request a query sent once, cut from the server's own
//!   rows (see `longtail`).
//!
//! Keywords come from the manifest `chaja seed` wrote (`--manifest`), or are
//! calibrated against the running server before the test: each candidate's
//! exact total divided by the indexed row count puts it in a class, so the
//! mix is right for whatever data the server holds.
//!
//! goose runs the users and writes its HTML report (TPS and latency over
//! time) and JSON metrics; this module adds an nGrinder-style summary (TPS,
//! peak TPS, mean/p50/p95/p99, executed, errors per request kind) printed and
//! written as `summary.json`. Like `main`, this is an edge of the library (a
//! client of the HTTP API), so it reports errors with `anyhow`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goose::config::GooseConfiguration;
use goose::metrics::{GooseMetrics, GooseRequestMetricTimingData};
use goose::prelude::*;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use serde::Serialize;
use serde_json::{json, Value};

/// What a load test runs, and against which server.
#[derive(Debug, Clone)]
pub struct LoadtestConfig {
    /// The chaja to test, such as `http://127.0.0.1:8080`.
    pub host: String,
    pub scenario: LoadScenario,
    /// Search only this keyword (a hot-key test) instead of the mix.
    pub keyword: Option<String>,
    /// The keyword manifest `chaja seed` wrote; without it keywords are
    /// calibrated against the server.
    pub manifest: Option<std::path::PathBuf>,
    /// Virtual users.
    pub users: usize,
    /// Users started per second.
    pub hatch_rate: usize,
    /// Test length in seconds, ramp-up included.
    pub run_time: usize,
    /// Stop each user after this many iterations (0: run for `run_time`).
    pub iterations: usize,
    /// Where report.html, report.json and summary.json go.
    pub report_dir: std::path::PathBuf,
    /// Sent with every request (`Authorization: Bearer`): the server then
    /// counts none of the test's searches in trending.
    pub admin_key: Option<String>,
}

/// An HTTP client that sends `admin_key`, when given, with every request.
pub(crate) fn client(admin_key: Option<&str>) -> anyhow::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder();
    if let Some(key) = admin_key {
        let mut headers = reqwest::header::HeaderMap::new();
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}"))?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
        builder = builder.default_headers(headers);
    }
    Ok(builder.build()?)
}

pub mod counters;
pub mod longtail;

/// Keywords a load test searches for. Common words of Korean developer
/// prose and of the built-in generator; calibration sorts them into classes.
const CANDIDATES: &[&str] = &[
    "이",
    "가",
    "는",
    "캐",
    "락",
    "니다",
    "습니다",
    "있습니다",
    "합니다",
    "사용",
    "에서",
    "함수",
    "파이썬",
    "타입",
    "컴포넌트",
    "트랜잭션",
    "커넥션 풀",
    "인덱스",
    "캐시",
    "데드락",
    "타임아웃",
    "소유권",
    "라이프타임",
    "클로저",
    "이터레이터",
    "트레이트",
    "리액트",
    "반환합니다",
    "인터프리터",
    "트레이스백",
    "None",
    "useState",
    "Spring Boot",
    "JPA",
    "Redis",
    "N+1 문제",
    "ERR-0",
    "v1.2",
    "파이썬 함수",
    "캐시 Redis",
    "\"값을 반환합니다\"",
    "모듈",
    "예외",
    "객체",
    "메서드",
    "변수",
    "클래스",
    "스레드",
    "비동기",
    "제네릭",
    "매크로",
    "구조체",
    "열거형",
    "패턴",
    "훅",
    "상태",
    "렌더링",
    "이벤트",
    "테스트",
    "배포",
    "로그",
    "설정",
    "권한 오류",
    "메모리 누수",
    "무한 루프",
    "ERR-1234",
    "loadUser",
    "fetchOrder",
    "v3.14",
    "슬라이스",
    "벡터",
    "해시맵",
    "딕셔너리",
];

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Mix {
    /// `--keyword`: every search is this one (a hot-key test).
    pub hot: Option<String>,
    /// In at most 3% of rows.
    pub rare: Vec<String>,
    /// In 3% to 50% of rows.
    pub common: Vec<String>,
    /// In more than 50% of rows.
    pub frequent: Vec<String>,
}

impl Mix {
    /// The manifest's classes: ≤ 1% (and single rows) are rare, ~10% common,
    /// > 80% frequent.
    pub fn from_manifest(manifest: &chaja_core::manifest::Manifest) -> Mix {
        let mut mix = Mix::default();
        for (class, words) in &manifest.classes {
            let target = if class.ends_with(">80%") {
                &mut mix.frequent
            } else if class.ends_with("~10%") {
                &mut mix.common
            } else {
                &mut mix.rare
            };
            target.extend(words.iter().map(|w| w.keyword.clone()));
        }
        mix
    }

    fn pick(&self, rng: &mut impl Rng) -> (&'static str, String) {
        if let Some(hot) = &self.hot {
            return ("search: hot", hot.clone());
        }
        let roll = rng.random_range(0..100);
        let classes = [
            ("search: rare", &self.rare, 70),
            ("search: ~10%", &self.common, 95),
            ("search: frequent", &self.frequent, 100),
        ];
        let mut fallback = None;
        for (name, words, upto) in classes {
            if !words.is_empty() {
                fallback.get_or_insert((name, words));
                if roll < upto {
                    let word = words.choose(rng).expect("not empty");
                    return (name, word.clone());
                }
            }
        }
        let (name, words) = fallback.expect("calibration found keywords");
        (name, words.choose(rng).expect("not empty").clone())
    }
}

/// State of the one running test, shared with goose's transaction
/// functions (plain functions, so it cannot be captured). One test runs at a
/// time per process; `run` resets it.
static RUN: Mutex<Option<RunState>> = Mutex::new(None);

struct RunState {
    /// Sent with every request, when given.
    admin_key: Option<String>,
    mix: Arc<Mix>,
    start: Instant,
    /// Requests finished in each second of the test, for the peak TPS.
    per_second: Vec<u64>,
    /// Write-to-searchable lags, in milliseconds.
    lags: Vec<f64>,
    /// The `longtail` scenario's queries.
    longtail: Option<longtail::Sampler>,
}

fn with_run<T>(f: impl FnOnce(&mut RunState) -> T) -> T {
    let mut run = RUN.lock().expect("loadtest state lock");
    f(run.as_mut().expect("a load test is running"))
}

fn mix() -> Arc<Mix> {
    with_run(|r| r.mix.clone())
}

fn tick() {
    with_run(|r| {
        let second = r.start.elapsed().as_secs() as usize;
        if r.per_second.len() <= second {
            r.per_second.resize(second + 1, 0);
        }
        r.per_second[second] += 1;
    });
}

/// Percent-encodes a query value (every byte but ASCII letters and digits).
pub fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Asks the server for each candidate's total and sorts them into classes.
/// The candidates are common words of Korean developer prose, and words
/// of the server's own rows (sampled over the search API, see
/// `longtail::fetch_texts`), so that any site's data gets a mix.
pub async fn calibrate(host: &str, admin_key: Option<&str>) -> anyhow::Result<Mix> {
    let client = client(admin_key)?;
    let ready: Value = client
        .get(format!("{host}/readyz"))
        .send()
        .await?
        .json()
        .await?;
    let docs = ready["index"]["docs"].as_u64().unwrap_or(0).max(1) as f64;
    let mut mix = Mix::default();
    let mut candidates: Vec<String> = CANDIDATES.iter().map(|w| (*w).to_owned()).collect();
    if let Ok(texts) = longtail::fetch_texts(host, 200, admin_key).await {
        let mut words: Vec<String> = texts
            .iter()
            .flat_map(|t| t.split_whitespace())
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned())
            .filter(|w| (2..=6).contains(&w.chars().count()))
            .collect();
        words.sort_unstable();
        words.dedup();
        words.shuffle(&mut rand::rng());
        candidates.extend(words.into_iter().take(60));
    }
    for word in &candidates {
        let url = format!("{host}/api/search?q={}&size=1", urlencode(word));
        let body: Value = client.get(url).send().await?.json().await?;
        let total = body["total"].as_u64().unwrap_or(0);
        if total == 0 {
            continue;
        }
        let share = total as f64 / docs;
        let class = if share > 0.5 {
            &mut mix.frequent
        } else if share > 0.03 {
            &mut mix.common
        } else {
            &mut mix.rare
        };
        if !class.contains(word) {
            class.push(word.clone());
        }
    }
    anyhow::ensure!(
        !(mix.rare.is_empty() && mix.common.is_empty() && mix.frequent.is_empty()),
        "no candidate keyword matches anything: index some rows first (chaja reindex, or chaja seed for the demo)"
    );
    Ok(mix)
}

async fn search(user: &mut GooseUser) -> TransactionResult {
    let (name, word) = mix().pick(&mut rand::rng());
    let path = format!("/api/search?q={}&size=10", urlencode(&word));
    let _ = user.get_named(&path, name).await?;
    tick();
    Ok(())
}

/// The author this goose user writes as.
struct Author(i64);

async fn post_created(
    user: &mut GooseUser,
    path: &str,
    name: &str,
    body: Value,
) -> Result<Option<i64>, Box<TransactionError>> {
    let url = user.build_url(path)?;
    let request = GooseRequest::builder()
        .method(GooseMethod::Post)
        .path(path)
        .name(name)
        .expect_status_code(201)
        .set_request_builder(user.client.post(url).json(&body))
        .build();
    let response = user.request(request).await?;
    tick();
    let id = match response.response {
        Ok(r) => r.json::<Value>().await.ok().and_then(|v| v["id"].as_i64()),
        Err(_) => None,
    };
    Ok(id)
}

async fn sign_up(user: &mut GooseUser) -> TransactionResult {
    let id = post_created(
        user,
        "/api/users",
        "users: create",
        json!({ "name": "loadtest" }),
    )
    .await?;
    user.set_session_data(Author(id.unwrap_or(1)));
    Ok(())
}

fn author(user: &GooseUser) -> i64 {
    user.get_session_data::<Author>().map_or(1, |a| a.0)
}

async fn flow(user: &mut GooseUser) -> TransactionResult {
    let me = author(user);
    let n: u32 = rand::rng().random();
    let body = json!({ "author_id": me, "title": format!("부하 테스트 질문 {n}"), "content": "nGrinder와 k6로 측정한 결과를 공유합니다. 캐시를 켜면 어떻게 달라질까요?" });
    let Some(q) = post_created(user, "/api/questions", "1 question: create", body).await? else {
        return Ok(());
    };
    let _ = user
        .get_named(&format!("/api/questions/{q}"), "2 question: read")
        .await?;
    tick();
    let review =
        json!({ "author_id": me, "content": "좋은 질문입니다. 커넥션 풀 크기도 함께 보세요." });
    let r = post_created(
        user,
        &format!("/api/questions/{q}/reviews"),
        "3 review: create",
        review,
    )
    .await?;
    if let Some(r) = r {
        let _ = user
            .get_named(&format!("/api/reviews/{r}"), "4 review: read")
            .await?;
        tick();
    }
    let (_, word) = mix().pick(&mut rand::rng());
    let _ = user
        .get_named(
            &format!("/api/search?q={}&size=10", urlencode(&word)),
            "5 search",
        )
        .await?;
    tick();
    let _ = user
        .get_named("/api/questions/top-liked?limit=10", "6 top liked")
        .await?;
    tick();
    let comment = json!({ "author_id": me, "content": "감사합니다" });
    post_created(
        user,
        &format!("/api/questions/{q}/comments"),
        "7 comment: create",
        comment,
    )
    .await?;
    Ok(())
}

/// Writes a row with a unique word, then searches until it is found.
async fn write_then_find(user: &mut GooseUser) -> TransactionResult {
    let me = author(user);
    let token = format!("신선도{:016x}", rand::rng().random::<u64>());
    let body =
        json!({ "author_id": me, "title": token, "content": "쓰기 후 검색까지 걸리는 시간" });
    let written = Instant::now();
    if post_created(user, "/api/questions", "write", body)
        .await?
        .is_none()
    {
        return Ok(());
    }
    // Page 2 is never cached and its total is still exact: the lag measured
    // is the index's, not the cache bound's.
    let path = format!("/api/search?q={}&size=1&page=2", urlencode(&token));
    while written.elapsed() < Duration::from_secs(5) {
        let response = user.get_named(&path, "freshness poll").await?;
        tick();
        let found = match response.response {
            Ok(r) => {
                r.json::<Value>()
                    .await
                    .ok()
                    .and_then(|v| v["total"].as_u64())
                    .unwrap_or(0)
                    > 0
            }
            Err(_) => false,
        };
        if found {
            let lag = written.elapsed().as_secs_f64() * 1000.0;
            with_run(|r| r.lags.push(lag));
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// A query never sent before in this run.
async fn longtail_search(user: &mut GooseUser) -> TransactionResult {
    let next = with_run(|r| {
        r.longtail
            .as_mut()
            .and_then(|sampler| sampler.next(&mut rand::rng()))
    });
    // The texts ran out of new queries: nothing more to send.
    let Some((class, query)) = next else {
        return Ok(());
    };
    let path = format!("/api/search?q={}&size=10", urlencode(&query));
    let _ = user.get_named(&path, class.name()).await?;
    tick();
    Ok(())
}

/// The address an abuser poses as.
struct Posing(String);

async fn pose(user: &mut GooseUser) -> TransactionResult {
    let mut rng = rand::rng();
    let address = format!(
        "198.18.{}.{}",
        rng.random_range(0..=255u8),
        rng.random_range(1..=254u8)
    );
    user.set_session_data(Posing(address));
    Ok(())
}

/// A search no cache answers: a frequent keyword, a random time range, a
/// deep page of 100 in a random order.
async fn abuse(user: &mut GooseUser) -> TransactionResult {
    let (path, address) = {
        let mut rng = rand::rng();
        let mix = mix();
        let words = [&mix.frequent, &mix.common, &mix.rare]
            .into_iter()
            .find(|w| !w.is_empty())
            .cloned()
            .unwrap_or_else(|| mix.hot.iter().cloned().collect());
        let word = words.choose(&mut rng).cloned().unwrap_or_default();
        // Seconds since the epoch, between 2015 and 2027.
        let a = rng.random_range(1_420_070_400..1_798_761_600i64);
        let b = rng.random_range(1_420_070_400..1_798_761_600i64);
        let at = |s: i64| {
            time::OffsetDateTime::from_unix_timestamp(s)
                .expect("in range")
                .format(&time::format_description::well_known::Rfc3339)
                .expect("formats")
        };
        let sort = if rng.random_bool(0.5) {
            "recent"
        } else {
            "oldest"
        };
        let path = format!(
            "/api/search?q={}&from={}&to={}&size=100&page={}&sort={sort}",
            urlencode(&word),
            urlencode(&at(a.min(b))),
            urlencode(&at(a.max(b))),
            rng.random_range(1..=100)
        );
        let address = user
            .get_session_data::<Posing>()
            .map_or_else(|| "198.18.0.1".to_owned(), |p| p.0.clone());
        (path, address)
    };
    let url = user.build_url(&path)?;
    let request = GooseRequest::builder()
        .method(GooseMethod::Get)
        .path(path.as_str())
        .name("abuse: random from/to, deep pages")
        .set_request_builder(user.client.get(url).header("x-forwarded-for", address))
        .build();
    let _ = user.request(request).await?;
    tick();
    Ok(())
}

/// What the users of a load test do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadScenario {
    /// Searches over the calibrated keyword mix.
    Search,
    /// The 7-step platform session.
    Flow,
    /// 90% searches, 10% writes, with write-to-searchable lag.
    Mixed,
    /// Half `search`, half abusers that defeat every cache.
    Abuse,
    /// Every request a never-seen query cut from the server's own rows.
    Longtail,
    /// A counter storm on a table, by plain SQL (see `counters`).
    Counters,
}

impl std::fmt::Display for LoadScenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoadScenario::Search => "search",
            LoadScenario::Flow => "flow",
            LoadScenario::Mixed => "mixed",
            LoadScenario::Abuse => "abuse",
            LoadScenario::Longtail => "longtail",
            LoadScenario::Counters => "counters",
        })
    }
}

/// Sends the admin key with every request of this goose user, when the
/// test was given one (see `LoadtestConfig::admin_key`).
async fn identify(user: &mut GooseUser) -> TransactionResult {
    let Some(key) = with_run(|r| r.admin_key.clone()) else {
        return Ok(());
    };
    let mut headers = reqwest::header::HeaderMap::new();
    if let Ok(mut value) = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")) {
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    user.set_client_builder(
        reqwest::Client::builder()
            .default_headers(headers)
            .timeout(Duration::from_secs(60)),
    )
    .await?;
    Ok(())
}

fn scenarios_for(name: LoadScenario) -> anyhow::Result<Vec<Scenario>> {
    let scenario =
        |name: &str| scenario!(name).register_transaction(transaction!(identify).set_on_start());
    Ok(match name {
        LoadScenario::Search => {
            vec![scenario("search").register_transaction(transaction!(search))]
        }
        LoadScenario::Flow => vec![scenario("flow")
            .register_transaction(transaction!(sign_up).set_on_start())
            .register_transaction(transaction!(flow))],
        LoadScenario::Mixed => vec![scenario("mixed")
            .register_transaction(transaction!(sign_up).set_on_start())
            .register_transaction(transaction!(search).set_weight(9)?)
            .register_transaction(transaction!(write_then_find).set_weight(1)?)],
        LoadScenario::Longtail => {
            vec![scenario("longtail").register_transaction(transaction!(longtail_search))]
        }
        LoadScenario::Counters => {
            anyhow::bail!(
                "the counters scenario is plain SQL, not users: run it with counters::run"
            )
        }
        LoadScenario::Abuse => vec![
            scenario("normal").register_transaction(transaction!(search)),
            scenario("abusers")
                .register_transaction(transaction!(pose).set_on_start())
                .register_transaction(transaction!(abuse)),
        ],
    })
}

#[derive(Debug, Serialize)]
pub struct KindSummary {
    pub kind: String,
    pub executed: usize,
    pub errors: usize,
    pub tps: f64,
    pub mean_ms: f64,
    pub p50_ms: usize,
    pub p95_ms: usize,
    pub p99_ms: usize,
    /// The slowest request of this kind.
    pub max_ms: usize,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub scenario: LoadScenario,
    pub host: String,
    pub users: usize,
    pub duration_s: usize,
    pub executed: usize,
    pub errors: usize,
    pub tps: f64,
    pub peak_tps: u64,
    pub mean_ms: f64,
    pub kinds: Vec<KindSummary>,
    /// Write-to-searchable lag (mixed scenario), in milliseconds.
    pub freshness_lag_ms: Option<BTreeMap<String, f64>>,
    /// Distinct queries sent (longtail scenario): equal to `executed` when
    /// no query was sent twice.
    pub unique_queries: Option<usize>,
    pub mix: Mix,
}

fn percentile(data: &GooseRequestMetricTimingData, p: f64) -> usize {
    let target = ((data.counter as f64) * p).ceil().max(1.0) as usize;
    let mut seen = 0;
    for (ms, count) in &data.times {
        seen += count;
        if seen >= target {
            return *ms;
        }
    }
    data.maximum_time
}

fn summarize(args: &LoadtestConfig, metrics: &GooseMetrics, state: RunState) -> Summary {
    let duration = metrics.duration.max(1);
    let mut kinds = Vec::new();
    let (mut executed, mut errors, mut total_time) = (0, 0, 0usize);
    for (key, aggregate) in &metrics.requests {
        let data = &aggregate.raw_data;
        let count = aggregate.success_count + aggregate.fail_count;
        executed += count;
        errors += aggregate.fail_count;
        total_time += data.total_time;
        kinds.push(KindSummary {
            kind: key.clone(),
            executed: count,
            errors: aggregate.fail_count,
            tps: count as f64 / duration as f64,
            mean_ms: data.total_time as f64 / data.counter.max(1) as f64,
            p50_ms: percentile(data, 0.50),
            p95_ms: percentile(data, 0.95),
            p99_ms: percentile(data, 0.99),
            max_ms: data.maximum_time,
        });
    }
    kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    let peak_tps = state.per_second.iter().copied().max().unwrap_or(0);
    let lags = state.lags;
    let freshness_lag_ms = (!lags.is_empty()).then(|| {
        let mut lags = lags;
        lags.sort_by(f64::total_cmp);
        let at = |p: f64| lags[((lags.len() as f64 * p) as usize).min(lags.len() - 1)];
        BTreeMap::from([
            ("samples".to_owned(), lags.len() as f64),
            ("p50".to_owned(), at(0.5)),
            ("p99".to_owned(), at(0.99)),
            ("max".to_owned(), lags[lags.len() - 1]),
        ])
    });
    Summary {
        scenario: args.scenario,
        host: args.host.clone(),
        users: args.users,
        duration_s: duration,
        executed,
        errors,
        tps: executed as f64 / duration as f64,
        peak_tps,
        mean_ms: total_time as f64 / executed.max(1) as f64,
        kinds,
        freshness_lag_ms,
        unique_queries: state.longtail.as_ref().map(longtail::Sampler::sent),
        mix: (*state.mix).clone(),
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The first line is what scripts read: TPS, executed, errors.
        writeln!(
            f,
            "TPS {:.1}  peak TPS {}  mean {:.2} ms  executed {}  errors {}",
            self.tps, self.peak_tps, self.mean_ms, self.executed, self.errors
        )?;
        writeln!(
            f,
            "scenario {} against {} with {} users for {} s",
            self.scenario, self.host, self.users, self.duration_s
        )?;
        writeln!(
            f,
            "{:<28} {:>9} {:>7} {:>9} {:>8} {:>5} {:>5} {:>5} {:>5}",
            "request", "executed", "errors", "TPS", "mean ms", "p50", "p95", "p99", "max"
        )?;
        for k in &self.kinds {
            writeln!(
                f,
                "{:<28} {:>9} {:>7} {:>9.1} {:>8.2} {:>5} {:>5} {:>5} {:>5}",
                k.kind,
                k.executed,
                k.errors,
                k.tps,
                k.mean_ms,
                k.p50_ms,
                k.p95_ms,
                k.p99_ms,
                k.max_ms
            )?;
        }
        if let Some(unique) = self.unique_queries {
            writeln!(f, "distinct queries sent: {unique}")?;
        }
        if let Some(lag) = &self.freshness_lag_ms {
            writeln!(
                f,
                "write-to-searchable lag: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({} samples)",
                lag["p50"], lag["p99"], lag["max"], lag["samples"]
            )?;
        }
        Ok(())
    }
}

/// The chart library goose's HTML report loads from a CDN.
const CHART_LIBRARY_TAG: &str =
    r#"<script src="https://cdn.jsdelivr.net/npm/echarts@5.2.2/dist/echarts.min.js"></script>"#;

/// That library (echarts 5.2.2 from npm, Apache-2.0, see `ECHARTS-LICENSE`),
/// gzipped.
const CHART_LIBRARY: &[u8] = include_bytes!("echarts-5.2.2.min.js.gz");

/// Puts the chart library into the report itself, so that it renders with
/// no network (a load-test box often has none). Blocking: a megabyte of
/// decompressing and file I/O.
fn inline_chart_library(path: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Read;
    let html = std::fs::read_to_string(path)?;
    anyhow::ensure!(
        html.contains(CHART_LIBRARY_TAG),
        "goose's report no longer loads echarts 5.2.2 from its CDN; update the inlined copy"
    );
    let mut library = String::new();
    flate2::read::GzDecoder::new(CHART_LIBRARY).read_to_string(&mut library)?;
    let inline = format!("<script>{library}</script>");
    std::fs::write(path, html.replacen(CHART_LIBRARY_TAG, &inline, 1))?;
    Ok(())
}

/// Fails, saying why, unless the server has the demo platform's write
/// routes, which `flow` and `mixed` drive: a server of a site's own tables
/// (`[[source]]`) serves searches only.
async fn demo_routes(host: &str) -> anyhow::Result<()> {
    let api: Value = reqwest::get(format!("{host}/api-docs/openapi.json"))
        .await?
        .json()
        .await?;
    anyhow::ensure!(
        api["paths"].get("/api/questions").is_some(),
        "the flow and mixed scenarios write through the demo platform's routes (POST /api/questions, /api/users), which this server does not serve: it mirrors a site's own tables ([[source]]). Run search, longtail or abuse, which need only the search API; or counters, which writes to your table with plain SQL"
    );
    Ok(())
}

/// Runs one bounded load test and writes its reports.
pub async fn run(args: &LoadtestConfig) -> anyhow::Result<Summary> {
    anyhow::ensure!(
        (1..=10_000).contains(&args.users),
        "users must be between 1 and 10000"
    );
    anyhow::ensure!(
        (1..=3600).contains(&args.run_time),
        "run-time must be between 1 and 3600 seconds"
    );
    let host = args.host.trim_end_matches('/').to_owned();
    let mix = match (&args.keyword, &args.manifest) {
        (Some(keyword), _) => Mix {
            hot: Some(keyword.clone()),
            ..Mix::default()
        },
        (None, Some(path)) => {
            let mix = Mix::from_manifest(&serde_json::from_slice(&std::fs::read(path)?)?);
            anyhow::ensure!(
                !(mix.rare.is_empty() && mix.common.is_empty() && mix.frequent.is_empty()),
                "the manifest {} lists no keywords",
                path.display()
            );
            mix
        }
        (None, None) if args.scenario == LoadScenario::Longtail => Mix::default(),
        (None, None) => calibrate(&host, args.admin_key.as_deref()).await?,
    };
    if matches!(args.scenario, LoadScenario::Flow | LoadScenario::Mixed) {
        demo_routes(&host).await?;
    }
    let mix = Arc::new(mix);
    let longtail = if args.scenario == LoadScenario::Longtail {
        let texts = longtail::fetch_texts(&host, 1000, args.admin_key.as_deref()).await?;
        Some(longtail::Sampler::new(texts))
    } else {
        None
    };
    std::fs::create_dir_all(&args.report_dir)?;
    let report =
        |name: &str| -> String { args.report_dir.join(name).to_string_lossy().into_owned() };

    let mut config = GooseConfiguration::default();
    config.host = host;
    config.users = Some(args.users);
    config.hatch_rate = Some(args.hatch_rate.to_string());
    config.run_time = args.run_time.to_string();
    config.iterations = args.iterations;
    config.report_file = vec![report("report.html"), report("report.json")];
    // goose writes its reports only when it prints its own metrics
    // (`GooseAttack::execute`): with `no_print_metrics` the files it created
    // at the start stayed empty.
    config.no_print_metrics = false;
    config.quiet = 1;
    config.no_telnet = true;
    config.no_websocket = true;
    config.no_reset_metrics = true;
    *RUN.lock().expect("loadtest state lock") = Some(RunState {
        admin_key: args.admin_key.clone(),
        mix,
        start: Instant::now(),
        per_second: Vec::new(),
        lags: Vec::new(),
        longtail,
    });
    let result = match scenarios_for(args.scenario) {
        Ok(scenarios) => {
            let mut attack = GooseAttack::initialize_with_config(config)?;
            for scenario in scenarios {
                attack = attack.register_scenario(scenario);
            }
            attack.execute().await.map_err(anyhow::Error::from)
        }
        Err(e) => Err(e),
    };
    let state = RUN
        .lock()
        .expect("loadtest state lock")
        .take()
        .expect("set above");
    let metrics = result?;
    let html = std::path::PathBuf::from(report("report.html"));
    tokio::task::spawn_blocking(move || inline_chart_library(&html)).await??;
    let summary = summarize(args, &metrics, state);
    std::fs::write(report("summary.json"), serde_json::to_vec_pretty(&summary)?)?;
    Ok(summary)
}
