//! The hot-query cache: L1 in-process, L2 Redis shared by every replica.
//!
//! A cached answer carries the outbox position (watermark) the index had
//! applied when it was computed. It is served only while it is exactly
//! fresh (the watermark is still the applied position) or younger than
//! `max_stale`; otherwise it is recomputed. Within a process, concurrent
//! requests that find no fresh answer for one key at one index position wait
//! for a single computation: a short-lived "flight" cache keyed by
//! `(key, watermark)` and moka's `try_get_with` coalesce them, so an expired
//! hot key costs one index search per process, not one per request.
//! L1 admission is moka's TinyLFU, so a flood of one-off queries does not
//! evict the hot set. Redis calls have a short timeout and a failure only
//! costs the L2 tier, never the search.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use crate::db::now_ms;
use crate::error::{Error, Result};
use crate::http::search::HitBody;
use crate::mirror::Progress;

/// What is cached: the answer without per-request timing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    pub total: u64,
    pub hits: Vec<HitBody>,
    pub next_cursor: Option<String>,
    /// The applied outbox position when it was computed.
    pub watermark: i64,
    pub computed_at_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CacheStatus {
    pub hit: bool,
    pub age_ms: i64,
}

#[derive(Clone)]
pub struct SearchCache {
    /// False when configured with no L1 memory: every search is computed.
    enabled: bool,
    l1: moka::future::Cache<String, Arc<Answer>>,
    /// In-flight and just-finished computations, by key and watermark.
    flights: moka::future::Cache<(String, i64), Arc<Answer>>,
    /// Index searches this cache has run, for tests and metrics.
    computations: Arc<std::sync::atomic::AtomicU64>,
    l2: Option<Redis>,
    max_stale_ms: i64,
    progress: Arc<Progress>,
}

#[derive(Clone)]
struct Redis {
    conn: ConnectionManager,
    prefix: Arc<str>,
    timeout: Duration,
    ttl_ms: u64,
    healthy: Arc<AtomicBool>,
}

impl SearchCache {
    pub fn new(
        redis_url: Option<&str>,
        prefix: &str,
        max_stale: Duration,
        l1_bytes: u64,
        progress: Arc<Progress>,
    ) -> Result<SearchCache> {
        let l1 = moka::future::Cache::builder()
            .max_capacity(l1_bytes)
            .weigher(|key: &String, answer: &Arc<Answer>| {
                let hits: usize = answer
                    .hits
                    .iter()
                    .map(|h| 128 + h.snippet.len() + h.title.as_ref().map_or(0, String::len))
                    .sum();
                u32::try_from(key.len() + hits).unwrap_or(u32::MAX)
            })
            .build();
        let l2 = match redis_url {
            None => None,
            Some(url) => {
                let timeout = Duration::from_millis(50);
                let client = redis::Client::open(url).map_err(|e| {
                    Error::bad_request("bad_redis_url", format!("REDIS_URL is invalid: {e}"))
                })?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1);
                let conn =
                    ConnectionManager::new_lazy_with_config(client, config).map_err(|e| {
                        Error::bad_request("bad_redis_url", format!("REDIS_URL is invalid: {e}"))
                    })?;
                Some(Redis {
                    conn,
                    prefix: format!("{prefix}:search:v1:").into(),
                    timeout,
                    // Past max_stale an entry is only good if its watermark is
                    // still current; a minute bounds what Redis keeps for that.
                    ttl_ms: (max_stale.as_millis() as u64).max(60_000),
                    healthy: Arc::new(AtomicBool::new(true)),
                })
            }
        };
        Ok(SearchCache {
            enabled: l1_bytes > 0,
            flights: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(1))
                .build(),
            computations: Arc::default(),
            l1,
            l2,
            max_stale_ms: max_stale.as_millis() as i64,
            progress,
        })
    }

    /// Index searches run on behalf of this cache so far.
    pub fn computations(&self) -> u64 {
        self.computations.load(Ordering::Relaxed)
    }

    fn is_fresh(&self, answer: &Answer, now: i64) -> bool {
        answer.watermark == self.progress.applied_seq()
            || now - answer.computed_at_ms < self.max_stale_ms
    }

    /// The cached answer for `key` if it is fresh enough, else `compute`'s,
    /// which is then cached in both tiers.
    pub async fn get_or_compute<F, Fut>(
        &self,
        key: &str,
        compute: F,
    ) -> Result<(Arc<Answer>, CacheStatus)>
    where
        F: FnOnce(i64) -> Fut,
        Fut: std::future::Future<Output = Result<Answer>>,
    {
        if !self.enabled {
            let answer = compute(self.progress.applied_seq()).await?;
            return Ok((
                Arc::new(answer),
                CacheStatus {
                    hit: false,
                    age_ms: 0,
                },
            ));
        }
        let now = now_ms();
        if let Some(answer) = self.l1.get(key).await {
            if self.is_fresh(&answer, now) {
                count("l1", "hit");
                return Ok(hit(answer, now));
            }
        }
        count("l1", "miss");
        if let Some(redis) = &self.l2 {
            if let Some(answer) = redis.get(key).await {
                if self.is_fresh(&answer, now) {
                    count("l2", "hit");
                    let answer = Arc::new(answer);
                    self.l1.insert(key.to_owned(), answer.clone()).await;
                    return Ok(hit(answer, now));
                }
            }
            count("l2", "miss");
        }
        // Read before computing: the answer is at least this fresh. Every
        // request that gets here for this key at this position shares one
        // computation.
        let watermark = self.progress.applied_seq();
        let answer = self
            .flights
            .try_get_with((key.to_owned(), watermark), async {
                self.computations.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("cache_computations_total").increment(1);
                let answer = Arc::new(compute(watermark).await?);
                if let Some(redis) = &self.l2 {
                    redis.set(key, &answer).await;
                }
                Ok::<_, Error>(answer)
            })
            .await
            .map_err(Error::Shared)?;
        self.l1.insert(key.to_owned(), answer.clone()).await;
        let age_ms = (now_ms() - answer.computed_at_ms).max(0);
        Ok((answer, CacheStatus { hit: false, age_ms }))
    }
}

fn count(tier: &'static str, result: &'static str) {
    metrics::counter!("cache_requests_total", "tier" => tier, "result" => result).increment(1);
}

fn hit(answer: Arc<Answer>, now: i64) -> (Arc<Answer>, CacheStatus) {
    let age_ms = (now - answer.computed_at_ms).max(0);
    (answer, CacheStatus { hit: true, age_ms })
}

impl Redis {
    async fn get(&self, key: &str) -> Option<Answer> {
        let mut conn = self.conn.clone();
        let call = conn.get::<_, Option<Vec<u8>>>(format!("{}{key}", self.prefix));
        let bytes = self.outcome(tokio::time::timeout(self.timeout, call).await)??;
        serde_json::from_slice(&bytes).ok()
    }

    async fn set(&self, key: &str, answer: &Answer) {
        let Ok(bytes) = serde_json::to_vec(answer) else {
            return;
        };
        let mut conn = self.conn.clone();
        let call = conn.pset_ex::<_, _, ()>(format!("{}{key}", self.prefix), bytes, self.ttl_ms);
        self.outcome(tokio::time::timeout(self.timeout, call).await);
    }

    /// Logs once per change between working and failing.
    fn outcome<T>(
        &self,
        result: std::result::Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Option<T> {
        let ok = matches!(result, Ok(Ok(_)));
        if !ok {
            metrics::counter!("cache_redis_errors_total").increment(1);
        }
        if self.healthy.swap(ok, Ordering::AcqRel) != ok {
            if ok {
                tracing::info!("redis cache tier is back");
            } else {
                tracing::warn!("redis cache tier failing; serving from l1 and the index");
            }
        }
        match result {
            Ok(Ok(value)) => Some(value),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(watermark: i64) -> Answer {
        Answer {
            total: 1,
            hits: Vec::new(),
            next_cursor: None,
            watermark,
            computed_at_ms: now_ms(),
        }
    }

    /// 200 concurrent requests for a key whose answer has expired run one
    /// index search, and a new index position runs exactly one more.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_hot_key_is_computed_once_for_200_requests() {
        let progress = Arc::new(Progress::default());
        let cache = SearchCache::new(None, "t", Duration::ZERO, 1 << 20, progress.clone()).unwrap();
        let burst = |cache: SearchCache| async move {
            let requests = (0..200).map(|_| {
                let cache = cache.clone();
                tokio::spawn(async move {
                    cache
                        .get_or_compute("hot", |w| async move {
                            // An index search that takes a while.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(answer(w))
                        })
                        .await
                        .unwrap()
                })
            });
            for request in requests.collect::<Vec<_>>() {
                request.await.unwrap();
            }
        };
        burst(cache.clone()).await;
        assert_eq!(cache.computations(), 1);
        // The index moves: every cached answer is stale at max_stale 0.
        progress.committed(7);
        burst(cache.clone()).await;
        assert_eq!(cache.computations(), 2);
        let (fresh, status) = cache
            .get_or_compute("hot", |w| async move { Ok(answer(w)) })
            .await
            .unwrap();
        assert_eq!((fresh.watermark, status.hit), (7, true));
    }
}
