//! The hot-query cache: L1 in-process, L2 Redis shared by every replica,
//! plus trending keywords (`crate::trending`).
//!
//! A cached answer carries the version of the index it was computed on
//! (its watermark: [`Version`], which changes with every commit
//! that changes documents and with every new generation, and is never
//! shared by two processes). It is fresh while that is still this process's
//! version, since a search now would give the same answer, or while it is
//! younger than `max_stale`. Past that bound one request per key recomputes
//! while the others keep getting the stale answer for `grace` more; across
//! replicas a short Redis lock picks the one that recomputes. So no answer
//! is ever older than `max_stale + grace` unless this process's index has
//! not changed since it was computed. Within a process, requests with no
//! answer at all for one key at one version share one computation: a
//! short-lived "flight" cache keyed by `(key, version)` and moka's
//! `try_get_with` coalesce them, so an expired hot key costs one index
//! search per process, not one per request.
//!
//! Admission: L1 is moka's TinyLFU, so a flood of one-off queries does not
//! evict the hot set; only a key requested twice within a minute is written
//! to Redis, so the flood does not reach it either. Redis failures only cost
//! the L2 tier ([`redis`] bounds every call and trips a breaker).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use crate::{Result, SearchError};
use chaja_core::clock::now_ms;
use chaja_index::search::{Rank, SearchKey};
use chaja_index::Version;

pub mod redis;

pub use self::redis::{BreakerState, RedisTier};

/// What is cached: the answer without per-request timing. Its hits are
/// encoded by whoever computed it (the HTTP layer's JSON), one by one: the
/// cache keeps and weighs bytes and never needs their type, and a page of
/// fewer hits is served from the first of them (see `service`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// Matching rows by source position; see [`Answer::total`].
    pub by_source: Vec<u64>,
    /// Each hit as a JSON value, in order.
    pub hits: Vec<Box<serde_json::value::RawValue>>,
    /// Each hit's rank, for the cursor of a page that ends there.
    pub ranks: Vec<Rank>,
    /// The facets the request asked for, over every match.
    #[serde(default)]
    pub facets: Vec<chaja_index::search::FacetCounts>,
    /// Whether the search may have found more than `hits`: it filled the
    /// page it was asked for.
    pub more: bool,
    /// The index version it was computed on ([`Version`]).
    pub watermark: i64,
    pub computed_at_ms: i64,
    /// The point in time it was computed on (`snapshots`), for the cursor
    /// of a page that ends in it; another process's names nothing here.
    #[serde(default)]
    pub snapshot: Option<u64>,
}

impl Answer {
    /// Every matching row, exactly.
    pub fn total(&self) -> u64 {
        self.by_source.iter().sum()
    }

    /// Bytes held, for the cache's weigher.
    fn weight(&self) -> usize {
        let hits: usize = self.hits.iter().map(|h| h.get().len()).sum();
        let facets: usize = self
            .facets
            .iter()
            .flat_map(|f| &f.values)
            .map(|(value, _)| value.len() + 8)
            .sum();
        hits + facets + self.ranks.len() * std::mem::size_of::<Rank>() + 64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CacheStatus {
    pub hit: bool,
    pub age_ms: i64,
    /// Served past `max_stale`, within the grace period, while another
    /// request recomputes it.
    pub stale: bool,
}

impl CacheStatus {
    pub const MISS: CacheStatus = CacheStatus {
        hit: false,
        age_ms: 0,
        stale: false,
    };
}

#[derive(Debug, Clone, Copy)]
pub struct CacheSettings {
    pub max_stale: Duration,
    pub grace: Duration,
    /// L1 size; 0 turns the cache off.
    pub l1_bytes: u64,
}

struct Entry {
    answer: Arc<Answer>,
    /// Already written to Redis.
    in_l2: AtomicBool,
}

#[derive(Clone)]
pub struct SearchCache {
    /// False when configured with no L1 memory: every search is computed.
    enabled: bool,
    l1: moka::future::Cache<String, Arc<Entry>>,
    /// In-flight and just-finished computations, by key and watermark.
    flights: moka::future::Cache<(String, i64), Arc<Answer>>,
    /// Keys this process is recomputing while their stale answer is served.
    refreshing: Arc<Mutex<HashSet<String>>>,
    /// Keys requested within the last minute: only repeats go to Redis.
    seen: moka::future::Cache<String, ()>,
    /// Index searches this cache has run, for tests and metrics.
    computations: Arc<AtomicU64>,
    /// Hits and misses by tier since start, for the console.
    tiers: Arc<TierCounts>,
    l2: Option<L2>,
    max_stale_ms: i64,
    grace_ms: i64,
    version: Version,
}

#[derive(Clone)]
struct L2 {
    redis: RedisTier,
    ttl_ms: u64,
}

/// Who recomputes a stale key.
enum Claim {
    /// This request; the mark is removed when the claim is dropped.
    Ours(Refreshing),
    /// Another request, here or in another replica: serve the stale answer.
    Taken,
}

struct Refreshing {
    set: Arc<Mutex<HashSet<String>>>,
    key: String,
    /// The Redis lock and this claim's token, when one was taken. Released
    /// on drop, so a recompute that fails or is cancelled (client gone,
    /// request timeout) does not hold other replicas off until it expires.
    lock: Option<(L2, String)>,
}

impl Drop for Refreshing {
    fn drop(&mut self) {
        self.set.lock().expect("refresh lock").remove(&self.key);
        if let Some((l2, token)) = self.lock.take() {
            // Without a runtime (shutting down) the lock just expires.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let key = self.key.clone();
                runtime.spawn(async move { l2.unlock(&key, &token).await });
            }
        }
    }
}

impl SearchCache {
    pub fn new(redis: Option<RedisTier>, settings: CacheSettings, version: Version) -> SearchCache {
        let l1 = moka::future::Cache::builder()
            .max_capacity(settings.l1_bytes)
            .weigher(|key: &String, entry: &Arc<Entry>| {
                let bytes = 256 + key.len() + entry.answer.weight();
                u32::try_from(bytes).unwrap_or(u32::MAX)
            })
            .build();
        let l2 = redis.map(|redis| L2 {
            redis,
            // Past max_stale + grace an entry is only good if its watermark
            // is still current; a minute bounds what Redis keeps for that.
            ttl_ms: ((settings.max_stale + settings.grace).as_millis() as u64).max(60_000),
        });
        SearchCache {
            enabled: settings.l1_bytes > 0,
            flights: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(1))
                .build(),
            refreshing: Arc::default(),
            seen: moka::future::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(Duration::from_secs(60))
                .build(),
            computations: Arc::default(),
            tiers: Arc::default(),
            l1,
            l2,
            max_stale_ms: settings.max_stale.as_millis() as i64,
            grace_ms: settings.grace.as_millis() as i64,
            version,
        }
    }

    /// The version of what searches see now (see [`Version`]): an answer
    /// computed at it is current.
    pub fn version(&self) -> i64 {
        self.version.get()
    }

    /// Index searches run on behalf of this cache so far.
    pub fn computations(&self) -> u64 {
        self.computations.load(Ordering::Relaxed)
    }

    /// `(hits, misses)` of a tier since this process started.
    pub fn tier_counts(&self, tier: Tier) -> (u64, u64) {
        let [hits, misses] = &self.tiers.counts[tier as usize];
        (hits.load(Ordering::Relaxed), misses.load(Ordering::Relaxed))
    }

    fn count(&self, tier: Tier, hit: bool) {
        let result = if hit { "hit" } else { "miss" };
        metrics::counter!("cache_requests_total", "tier" => tier.as_str(), "result" => result)
            .increment(1);
        self.tiers.counts[tier as usize][usize::from(!hit)].fetch_add(1, Ordering::Relaxed);
    }

    /// The Redis breaker's state, or `None` without Redis.
    pub fn redis_state(&self) -> Option<BreakerState> {
        self.l2.as_ref().map(|l2| l2.redis.breaker_state())
    }

    fn is_fresh(&self, answer: &Answer, now: i64) -> bool {
        answer.watermark == self.version.get() || now - answer.computed_at_ms < self.max_stale_ms
    }

    /// The cached answer for `key` if it is fresh enough, else `compute`'s,
    /// which is then cached.
    pub async fn get_or_compute<F, Fut>(
        &self,
        key: &SearchKey,
        compute: F,
    ) -> Result<(Arc<Answer>, CacheStatus)>
    where
        F: FnOnce(i64) -> Fut,
        Fut: std::future::Future<Output = Result<Answer>>,
    {
        let key = key.as_str();
        if !self.enabled {
            let answer = compute(self.version.get()).await?;
            return Ok((Arc::new(answer), CacheStatus::MISS));
        }
        let now = now_ms();
        let repeat = self.seen.contains_key(key);
        if !repeat {
            self.seen.insert(key.to_owned(), ()).await;
        }
        let mut stale = None;
        if let Some(entry) = self.l1.get(key).await {
            if self.is_fresh(&entry.answer, now) {
                self.count(Tier::L1, true);
                if repeat {
                    self.promote(key, &entry);
                }
                return Ok(served(entry.answer.clone(), now, false));
            }
            stale = Some(entry.answer.clone());
        }
        self.count(Tier::L1, false);
        if let Some(l2) = &self.l2 {
            if let Some(answer) = l2.get(key).await {
                if self.is_fresh(&answer, now) {
                    self.count(Tier::L2, true);
                    let answer = Arc::new(answer);
                    let entry = Entry {
                        answer: answer.clone(),
                        in_l2: AtomicBool::new(true),
                    };
                    self.l1.insert(key.to_owned(), Arc::new(entry)).await;
                    return Ok(served(answer, now, false));
                }
                if stale
                    .as_ref()
                    .is_none_or(|s| s.computed_at_ms < answer.computed_at_ms)
                {
                    stale = Some(Arc::new(answer));
                }
            }
            self.count(Tier::L2, false);
        }
        let mut claim = None;
        // The answer in grace this request recomputes: served instead of a
        // 503 if the recompute is shed or runs out of time under load.
        let mut in_grace = None;
        if let Some(stale) = stale {
            // Redis calls took time: the bound is checked against the clock
            // now, not at the start of the request.
            let now = now_ms();
            if now - stale.computed_at_ms < self.max_stale_ms + self.grace_ms {
                match self.claim(key).await {
                    Claim::Taken => {
                        self.count(Tier::Grace, true);
                        return Ok(served(stale, now, true));
                    }
                    Claim::Ours(refreshing) => {
                        claim = Some(refreshing);
                        in_grace = Some(stale);
                    }
                }
            }
        }
        // The replica that recomputes for the deployment publishes to Redis
        // even if the key is new here: the others are waiting for it.
        let publish = repeat || claim.is_some();
        let answer = self.compute(key, publish, compute).await;
        drop(claim);
        let answer = match (answer, in_grace) {
            // Still within the bound now, after the wait: a search can wait
            // in the heavy lane, or join a flight started long before.
            (Err(e), Some(stale))
                if e.is_busy()
                    && now_ms() - stale.computed_at_ms < self.max_stale_ms + self.grace_ms =>
            {
                self.count(Tier::Grace, true);
                return Ok(served(stale, now_ms(), true));
            }
            (answer, _) => answer?,
        };
        let age_ms = (now_ms() - answer.computed_at_ms).max(0);
        Ok((
            answer,
            CacheStatus {
                hit: false,
                age_ms,
                stale: false,
            },
        ))
    }

    async fn compute<F, Fut>(&self, key: &str, publish: bool, compute: F) -> Result<Arc<Answer>>
    where
        F: FnOnce(i64) -> Fut,
        Fut: std::future::Future<Output = Result<Answer>>,
    {
        // Read before computing: the answer is at least this fresh. Every
        // request that gets here for this key at this position shares one
        // computation.
        let watermark = self.version.get();
        let answer = self
            .flights
            .try_get_with((key.to_owned(), watermark), async {
                self.computations.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("cache_computations_total").increment(1);
                let answer = Arc::new(compute(watermark).await?);
                let mut in_l2 = false;
                if let Some(l2) = self.l2.as_ref().filter(|_| publish) {
                    in_l2 = l2.set(key, &answer).await;
                }
                let entry = Entry {
                    answer: answer.clone(),
                    in_l2: AtomicBool::new(in_l2),
                };
                self.l1.insert(key.to_owned(), Arc::new(entry)).await;
                Ok::<_, SearchError>(answer)
            })
            .await
            .map_err(SearchError::Shared)?;
        Ok(answer)
    }

    /// Decides who recomputes a stale key: the first request in this
    /// process, and of those, the one replica that takes the Redis lock.
    async fn claim(&self, key: &str) -> Claim {
        if !self
            .refreshing
            .lock()
            .expect("refresh lock")
            .insert(key.to_owned())
        {
            return Claim::Taken;
        }
        let mut refreshing = Refreshing {
            set: self.refreshing.clone(),
            key: key.to_owned(),
            lock: None,
        };
        if let Some(l2) = &self.l2 {
            let token = format!("{:016x}", rand::random::<u64>());
            match l2.lock(key, &token).await {
                Some(true) => refreshing.lock = Some((l2.clone(), token)),
                // Another replica is on it; this one's mark goes with the
                // dropped claim.
                Some(false) => return Claim::Taken,
                // Redis is not answering: recompute here.
                None => {}
            }
        }
        Claim::Ours(refreshing)
    }

    /// Writes an answer that turned out to be hot to Redis, off the request.
    fn promote(&self, key: &str, entry: &Arc<Entry>) {
        let Some(l2) = self.l2.clone() else { return };
        if entry.in_l2.swap(true, Ordering::AcqRel) {
            return;
        }
        let key = key.to_owned();
        let entry = entry.clone();
        tokio::spawn(async move {
            if !l2.set(&key, &entry.answer).await {
                // Redis did not take it: try again on a later hit.
                entry.in_l2.store(false, Ordering::Release);
            }
        });
    }
}

/// A cache tier, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    L1,
    L2,
    /// A stale answer served while another request recomputes it.
    Grace,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::L1, Tier::L2, Tier::Grace];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::L1 => "l1",
            Tier::L2 => "l2",
            Tier::Grace => "grace",
        }
    }
}

/// Hits and misses per tier, kept beside the Prometheus counters so that
/// the console can show ratios without a metrics backend.
#[derive(Debug, Default)]
struct TierCounts {
    /// `[hits, misses]` per tier, in `Tier::ALL` order.
    counts: [[AtomicU64; 2]; 3],
}

fn served(answer: Arc<Answer>, now: i64, stale: bool) -> (Arc<Answer>, CacheStatus) {
    let age_ms = (now - answer.computed_at_ms).max(0);
    let status = CacheStatus {
        hit: true,
        age_ms,
        stale,
    };
    (answer, status)
}

impl L2 {
    fn key(&self, key: &str) -> String {
        format!("{}search:v5:{key}", self.redis.prefix)
    }

    fn lock_key(&self, key: &str) -> String {
        format!("{}search:lock:{key}", self.redis.prefix)
    }

    async fn get(&self, key: &str) -> Option<Answer> {
        let key = self.key(key);
        let bytes = self
            .redis
            .call(|mut conn| async move { conn.get::<_, Option<Vec<u8>>>(key).await })
            .await??;
        serde_json::from_slice(&bytes).ok()
    }

    /// True when Redis took it.
    async fn set(&self, key: &str, answer: &Answer) -> bool {
        let Ok(bytes) = serde_json::to_vec(answer) else {
            return false;
        };
        let (key, ttl) = (self.key(key), self.ttl_ms);
        self.redis
            .call(|mut conn| async move { conn.pset_ex::<_, _, ()>(key, bytes, ttl).await })
            .await
            .is_some()
    }

    /// `Some(true)` when `token` now holds the recompute lock for `key`;
    /// it expires by itself if this process dies holding it.
    async fn lock(&self, key: &str, token: &str) -> Option<bool> {
        let key = self.lock_key(key);
        let token = token.to_owned();
        self.redis
            .call(|mut conn| async move {
                let set: Option<String> = ::redis::cmd("SET")
                    .arg(key)
                    .arg(token)
                    .arg("NX")
                    .arg("PX")
                    .arg(LOCK_MS)
                    .query_async(&mut conn)
                    .await?;
                Ok(set.is_some())
            })
            .await
    }

    /// Releases the lock if `token` still holds it.
    async fn unlock(&self, key: &str, token: &str) {
        let key = self.lock_key(key);
        let token = token.to_owned();
        self.redis
            .call(|mut conn| async move {
                UNLOCK
                    .key(key)
                    .arg(token)
                    .invoke_async::<i64>(&mut conn)
                    .await
            })
            .await;
    }
}

/// How long a recompute lock lives if its holder never releases it.
const LOCK_MS: u64 = 2_000;

static UNLOCK: std::sync::LazyLock<::redis::Script> = std::sync::LazyLock::new(|| {
    ::redis::Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end",
    )
});

#[cfg(test)]
mod tests {
    use super::*;

    fn hot() -> SearchKey {
        let request =
            chaja_index::search::Request::newest_first(chaja_core::text::parse_query("hot"), 10);
        SearchKey::first_page(&request)
    }

    fn answer(watermark: i64) -> Answer {
        Answer {
            by_source: vec![1, 0],
            hits: Vec::new(),
            ranks: Vec::new(),
            facets: Vec::new(),
            more: false,
            watermark,
            computed_at_ms: now_ms(),
            snapshot: None,
        }
    }

    fn cache(grace_ms: u64, version: &Version) -> SearchCache {
        let settings = CacheSettings {
            max_stale: Duration::ZERO,
            grace: Duration::from_millis(grace_ms),
            l1_bytes: 1 << 20,
        };
        SearchCache::new(None, settings, version.clone())
    }

    /// Sends 200 concurrent requests for one key; returns how many were
    /// served a stale answer.
    async fn burst(cache: &SearchCache) -> usize {
        let requests = (0..200).map(|_| {
            let cache = cache.clone();
            tokio::spawn(async move {
                let (_, status) = cache
                    .get_or_compute(&hot(), |w| async move {
                        // An index search that takes a while.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok(answer(w))
                    })
                    .await
                    .unwrap();
                status.stale
            })
        });
        let mut stale = 0;
        for request in requests.collect::<Vec<_>>() {
            stale += usize::from(request.await.unwrap());
        }
        stale
    }

    /// 200 concurrent requests for a key whose answer has expired run one
    /// index search, and a new index position runs exactly one more.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_hot_key_is_computed_once_for_200_requests() {
        let version = Version::default();
        let cache = cache(0, &version);
        burst(&cache).await;
        assert_eq!(cache.computations(), 1);
        // The index changes: every cached answer is stale at max_stale 0.
        version.bump();
        assert_eq!(
            burst(&cache).await,
            0,
            "no grace: nobody gets a stale answer"
        );
        assert_eq!(cache.computations(), 2);
        let (fresh, status) = cache
            .get_or_compute(&hot(), |w| async move { Ok(answer(w)) })
            .await
            .unwrap();
        assert_eq!((fresh.watermark, status.hit), (version.get(), true));
    }

    /// Within the grace period one request recomputes an expired key and the
    /// other 199 get the stale answer without waiting for it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn within_grace_one_request_recomputes_and_the_rest_get_the_stale_answer() {
        let version = Version::default();
        let cache = cache(60_000, &version);
        burst(&cache).await;
        version.bump();
        // The recompute finishes only when released.
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let mut requests = tokio::task::JoinSet::new();
        for _ in 0..200 {
            let (cache, release) = (cache.clone(), release.clone());
            requests.spawn(async move {
                let compute = |w| async move {
                    release.acquire().await.unwrap().forget();
                    Ok(answer(w))
                };
                cache.get_or_compute(&hot(), compute).await.unwrap().1
            });
        }
        for _ in 0..199 {
            let next = tokio::time::timeout(Duration::from_secs(30), requests.join_next());
            let status = next.await.expect("199 answers without the recompute");
            let status = status.unwrap().unwrap();
            assert!(status.hit && status.stale, "{status:?}");
        }
        release.add_permits(1);
        let last = requests.join_next().await.unwrap().unwrap();
        assert!(!last.hit && !last.stale);
        assert_eq!(cache.computations(), 2);
        let (fresh, status) = cache
            .get_or_compute(&hot(), |w| async move { Ok(answer(w)) })
            .await
            .unwrap();
        assert_eq!(
            (fresh.watermark, status.hit, status.stale),
            (version.get(), true, false)
        );
    }

    /// A recompute shed under load (or out of time) serves the answer in
    /// grace instead of an error; with no answer in grace the error is
    /// the request's.
    #[tokio::test]
    async fn a_shed_recompute_serves_the_answer_in_grace() {
        let version = Version::default();
        let cache = cache(60_000, &version);
        burst(&cache).await;
        version.bump();
        let shed = |_| async { Err(SearchError::Overloaded) };
        let (stale, status) = cache.get_or_compute(&hot(), shed).await.unwrap();
        assert_eq!(cache.computations(), 2, "the recompute was tried");
        assert!(status.hit && status.stale, "{status:?}");
        assert!(stale.watermark < version.get());
        let other = SearchKey::first_page(&chaja_index::search::Request::newest_first(
            chaja_core::text::parse_query("없는말"),
            10,
        ));
        let refused = cache.get_or_compute(&other, shed).await;
        assert!(matches!(
            refused,
            Err(SearchError::Shared(_) | SearchError::Overloaded)
        ));
    }

    /// An answer in grace when the recompute began, but past its bound when
    /// the recompute was shed, is not served: the bound holds however long
    /// the recompute waited.
    #[tokio::test]
    async fn a_shed_recompute_past_the_bound_serves_no_stale_answer() {
        let version = Version::default();
        let cache = cache(200, &version);
        burst(&cache).await;
        version.bump();
        let shed_late = |_| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Err(SearchError::Overloaded)
        };
        let refused = cache.get_or_compute(&hot(), shed_late).await;
        assert!(refused.is_err(), "served an answer past its bound");
    }
}
