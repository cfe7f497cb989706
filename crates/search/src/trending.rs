//! Trending keywords (실시간 인기 검색어): the most searched normalized
//! keywords over a sliding window, each client counted once per keyword
//! per window.
//!
//! Counts live in time buckets, a twelfth of the window wide, so a window
//! is the sum of its last 13 buckets (its edge is rounded to a bucket).
//! With Redis the buckets are sorted sets shared by every replica and a
//! `SET NX PX window` key per (window, client, keyword) makes the once per
//! client rule hold across replicas; without Redis the same structures live
//! in this process. Recording is off the request path: searches push onto
//! a bounded channel and a background task applies them, dropping events
//! when it falls behind rather than slowing searches down.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::cache::RedisTier;
use crate::{Result, SearchError};
use chaja_core::clock::now_ms;

/// A window trending is counted over: `10m`, `1h` (the API's default) or
/// `24h`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
pub enum Window {
    #[serde(rename = "10m")]
    TenMinutes,
    #[serde(rename = "1h")]
    Hour,
    #[serde(rename = "24h")]
    Day,
}

impl Window {
    pub const ALL: [Window; 3] = [Window::TenMinutes, Window::Hour, Window::Day];

    /// The name in the API and in Redis keys.
    pub const fn name(self) -> &'static str {
        match self {
            Window::TenMinutes => "10m",
            Window::Hour => "1h",
            Window::Day => "24h",
        }
    }

    const fn width_ms(self) -> i64 {
        match self {
            Window::TenMinutes => 10 * 60_000,
            Window::Hour => 3_600_000,
            Window::Day => 24 * 3_600_000,
        }
    }
}

const BUCKETS_PER_WINDOW: i64 = 12;

/// Distinct keywords counted per bucket: a flood of unique queries cannot
/// grow memory (here or in Redis) without bound. First come, first
/// counted: once a bucket is full, new keywords wait for the next one.
const BUCKET_CAP: usize = 5_000;

/// Distinct keywords one client can add to a bucket: past it, the client's
/// searches are not counted until the next bucket. A script sending
/// random queries then moves at most this many counts per bucket, and
/// leaves at most this many marks; IPv6 clients are keyed by their /64
/// (see `http::client`), so one machine is one client.
const CLIENT_CAP: u64 = 30;

/// Once-per-client marks kept in process, per window; past that many
/// (client, keyword) pairs moka evicts some, and those may count again.
const LOCAL_MARKS: u64 = 200_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Trend {
    pub keyword: String,
    pub count: u64,
}

#[derive(Debug)]
struct Event {
    keyword: String,
    client: IpAddr,
    at_ms: i64,
}

enum Message {
    Record(Event),
    /// Answered once every event sent before it has been applied.
    Flush(tokio::sync::oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct Trending {
    tx: mpsc::Sender<Message>,
    store: Store,
    min_chars: usize,
    /// A keyword is listed only once this many distinct clients searched
    /// it in the window: one client (a load test, a bot) cannot make a
    /// trend however often it searches.
    min_clients: u64,
}

#[derive(Clone)]
enum Store {
    Local(Arc<Mutex<Local>>),
    Redis(RedisTier),
}

impl Trending {
    /// Keywords shorter than `min_chars` (spaces not counted) are never
    /// counted, so never listed, and one searched by fewer than
    /// `min_clients` clients in a window is not listed for it. Starts the
    /// background recorder, which stops when the last handle is dropped.
    pub fn new(redis: Option<RedisTier>, min_chars: usize, min_clients: u64) -> Trending {
        let store = match redis {
            Some(redis) => Store::Redis(redis),
            None => Store::Local(Arc::default()),
        };
        let (tx, mut rx) = mpsc::channel::<Message>(10_000);
        let recorder = store.clone();
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                match message {
                    Message::Record(event) => recorder.record(&event).await,
                    Message::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Trending {
            tx,
            store,
            min_chars: min_chars.max(1),
            min_clients: min_clients.max(1),
        }
    }

    /// Counts a search for `keyword` (already normalized) by `client`.
    pub fn record(&self, keyword: &str, client: IpAddr) {
        self.record_at(keyword, client, now_ms());
    }

    pub fn record_at(&self, keyword: &str, client: IpAddr, at_ms: i64) {
        if keyword.chars().filter(|c| !c.is_whitespace()).count() < self.min_chars {
            return;
        }
        let event = Event {
            keyword: keyword.to_owned(),
            client,
            at_ms,
        };
        if self.tx.try_send(Message::Record(event)).is_err() {
            metrics::counter!("trending_dropped_total").increment(1);
        }
    }

    /// Waits until every event recorded so far has been applied; for tests
    /// and benchmarks that read right after writing.
    pub async fn flush(&self) {
        let (done, applied) = tokio::sync::oneshot::channel();
        if self.tx.send(Message::Flush(done)).await.is_ok() {
            let _ = applied.await;
        }
    }

    pub async fn top(&self, window: Window, limit: usize) -> Result<Vec<Trend>> {
        self.top_at(window, limit, now_ms()).await
    }

    /// The most searched keywords of `window` at `now`: each client counts
    /// once per keyword per window, so a count is distinct clients, and
    /// only counts of at least `min_clients` are listed.
    pub async fn top_at(&self, window: Window, limit: usize, now: i64) -> Result<Vec<Trend>> {
        let mut top = self.counted_at(window, limit, now).await?;
        top.retain(|t| t.count >= self.min_clients);
        Ok(top)
    }

    async fn counted_at(&self, window: Window, limit: usize, now: i64) -> Result<Vec<Trend>> {
        let (name, width) = (window.name(), window.width_ms());
        let bucket = width / BUCKETS_PER_WINDOW;
        let buckets = (now - width) / bucket..=now / bucket;
        match &self.store {
            Store::Local(local) => {
                let local = local.clone();
                let top = tokio::task::spawn_blocking(move || {
                    local
                        .lock()
                        .expect("trending lock")
                        .top(name, buckets, limit)
                });
                Ok(top.await?)
            }
            Store::Redis(redis) => {
                let tag = redis.tagged("trend");
                let keys: Vec<String> = buckets.map(|b| format!("{tag}{name}:{b}")).collect();
                let tmp = format!("{tag}tmp:{:016x}", rand::random::<u64>());
                let top: Vec<(String, f64)> = redis
                    .call(|mut conn| async move {
                        TOP.key(tmp)
                            .key(&keys)
                            .arg(limit)
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await
                    .ok_or(SearchError::RedisUnavailable("trending"))?;
                Ok(top
                    .into_iter()
                    .map(|(keyword, count)| Trend {
                        keyword,
                        count: count as u64,
                    })
                    .collect())
            }
        }
    }
}

impl Store {
    async fn record(&self, event: &Event) {
        match self {
            Store::Local(local) => local.lock().expect("trending lock").record(event),
            Store::Redis(redis) => {
                let client = client_hash(event.client, &event.keyword);
                let who = client_hash(event.client, "");
                let tag = redis.tagged("trend");
                let mut script = RECORD.prepare_invoke();
                script.arg(&event.keyword).arg(BUCKET_CAP).arg(CLIENT_CAP);
                // Per window, the keys it touches, declared (one hash tag,
                // so one cluster slot): the bucket, this client's budget
                // in it, and this client's mark for this keyword.
                for window in Window::ALL {
                    let (name, width) = (window.name(), window.width_ms());
                    let bucket = width / BUCKETS_PER_WINDOW;
                    let index = event.at_ms.div_euclid(bucket);
                    script
                        .key(format!("{tag}{name}:{index}"))
                        .key(format!("{tag}client:{name}:{index}:{who}"))
                        .key(format!("{tag}seen:{name}:{client}"))
                        .arg(width)
                        .arg(bucket);
                }
                redis
                    .call(|mut conn| async move { script.invoke_async::<()>(&mut conn).await })
                    .await;
            }
        }
    }
}

/// Clients are not stored, only a hash that tells two apart.
fn client_hash(client: IpAddr, keyword: &str) -> String {
    let hash = blake3::hash(format!("{client}\u{0}{keyword}").as_bytes());
    hash.to_hex()[..24].to_owned()
}

/// For each window: count the keyword unless this client was counted for it
/// within the window, the client already added `client_cap` keywords to
/// this bucket, or the bucket already holds `cap` other keywords (so a
/// flood of distinct queries can neither grow a bucket nor leave a mark
/// per query). Every key is declared (`KEYS`, three per window) and shares
/// one hash tag, so on a cluster the script runs on the one slot that
/// holds them.
static RECORD: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
local keyword, cap, client_cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for w = 0, #KEYS / 3 - 1 do
  local key, budget, seen = KEYS[3 * w + 1], KEYS[3 * w + 2], KEYS[3 * w + 3]
  local width, bucket = tonumber(ARGV[4 + 2 * w]), tonumber(ARGV[5 + 2 * w])
  if (redis.call('ZCARD', key) < cap or redis.call('ZSCORE', key, keyword))
    and tonumber(redis.call('GET', budget) or '0') < client_cap then
    if redis.call('SET', seen, '1', 'NX', 'PX', width) then
      redis.call('ZINCRBY', key, 1, keyword)
      redis.call('PEXPIRE', key, width + 2 * bucket)
      redis.call('INCR', budget)
      redis.call('PEXPIRE', budget, 2 * bucket)
    end
  end
end
",
    )
});

/// Sums the window's buckets (`KEYS[2..]`) into a temporary set
/// (`KEYS[1]`) and reads its top; the keys share a hash tag.
static TOP: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
local keys = {}
for i = 2, #KEYS do keys[#keys + 1] = KEYS[i] end
local limit = tonumber(ARGV[1])
redis.call('ZUNIONSTORE', KEYS[1], #keys, unpack(keys))
local top = redis.call('ZREVRANGE', KEYS[1], 0, limit - 1, 'WITHSCORES')
redis.call('DEL', KEYS[1])
return top
",
    )
});

/// The in-process store: the same buckets and once-per-client marks, both
/// bounded.
#[derive(Default)]
struct Local {
    /// window → bucket → keyword → count.
    buckets: HashMap<&'static str, BTreeMap<i64, HashMap<String, u64>>>,
    /// window → (client, keyword) hashes → when the mark expires.
    seen: HashMap<&'static str, moka::sync::Cache<String, i64>>,
    /// window → client hash → (bucket, keywords it added to that bucket).
    added: HashMap<&'static str, moka::sync::Cache<String, (i64, u64)>>,
}

impl Local {
    fn record(&mut self, event: &Event) {
        let client = client_hash(event.client, &event.keyword);
        let who = client_hash(event.client, "");
        let now = event.at_ms;
        for (name, width) in Window::ALL.map(|w| (w.name(), w.width_ms())) {
            let bucket = width / BUCKETS_PER_WINDOW;
            let series = self.buckets.entry(name).or_default();
            let oldest = (now - width) / bucket - 1;
            *series = series.split_off(&oldest);
            let counts = series.entry(now / bucket).or_default();
            if counts.len() >= BUCKET_CAP && !counts.contains_key(&event.keyword) {
                continue;
            }
            let seen = self.seen.entry(name).or_insert_with(|| {
                moka::sync::Cache::builder()
                    .max_capacity(LOCAL_MARKS)
                    .time_to_live(Duration::from_millis(width as u64))
                    .build()
            });
            if seen.get(&client).is_some_and(|until| until > now) {
                continue;
            }
            let added = self.added.entry(name).or_insert_with(|| {
                moka::sync::Cache::builder()
                    .max_capacity(LOCAL_MARKS)
                    .time_to_live(Duration::from_millis(2 * bucket as u64))
                    .build()
            });
            let this_bucket = now / bucket;
            let so_far = match added.get(&who) {
                Some((b, n)) if b == this_bucket => n,
                _ => 0,
            };
            if so_far >= CLIENT_CAP {
                continue;
            }
            added.insert(who.clone(), (this_bucket, so_far + 1));
            seen.insert(client.clone(), now + width);
            *counts.entry(event.keyword.clone()).or_default() += 1;
        }
    }

    fn top(&self, name: &str, buckets: std::ops::RangeInclusive<i64>, limit: usize) -> Vec<Trend> {
        let mut sums: HashMap<&str, u64> = HashMap::new();
        if let Some(series) = self.buckets.get(name) {
            for counts in series.range(buckets).map(|(_, c)| c) {
                for (keyword, count) in counts {
                    *sums.entry(keyword).or_default() += count;
                }
            }
        }
        let mut top: Vec<Trend> = sums
            .into_iter()
            .map(|(keyword, count)| Trend {
                keyword: keyword.to_owned(),
                count,
            })
            .collect();
        // Ties in Redis's order: reverse lexicographic.
        top.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| b.keyword.cmp(&a.keyword))
        });
        top.truncate(limit);
        top
    }
}
