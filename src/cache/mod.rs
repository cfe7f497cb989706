//! The hot-query cache: L1 in-process, L2 Redis shared by every replica.
//!
//! A cached answer carries the outbox position (watermark) the index had
//! applied when it was computed. It is served only while it is exactly
//! fresh (the watermark is still the applied position) or younger than
//! `max_stale`; otherwise it is recomputed. Within a process, concurrent
//! misses on one key wait for a single computation (moka's `try_get_with`).
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
            l1,
            l2,
            max_stale_ms: max_stale.as_millis() as i64,
            progress,
        })
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
            self.l1.invalidate(key).await;
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
        // Read before computing: the answer is at least this fresh.
        let watermark = self.progress.applied_seq();
        let answer = self
            .l1
            .try_get_with(key.to_owned(), async {
                let answer = Arc::new(compute(watermark).await?);
                if let Some(redis) = &self.l2 {
                    redis.set(key, &answer).await;
                }
                Ok::<_, Error>(answer)
            })
            .await
            .map_err(Error::Shared)?;
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
