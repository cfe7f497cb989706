//! The Redis connection the cache tiers share, behind a short timeout and a
//! circuit breaker.
//!
//! Redis is an accelerator, never a dependency of an answer: every call is
//! bounded by a timeout and yields `None` on failure. After a few failures
//! in a row the breaker opens and calls are skipped without touching the
//! network, so a dead Redis costs nothing per request; after a back-off
//! (1 s, doubling to 10 s) calls are let through again as probes (failsafe
//! lets every call through while half open), and one success closes the
//! breaker.
//! `failsafe` provides the state machine; the instrument below turns its
//! transitions into one log line each and a gauge.
//!
//! `REDIS_URL` names one node (`redis://host:port`) or a Redis Cluster:
//! `redis+cluster://host:port,host:port,…` or a comma-separated list of
//! `redis://` nodes. On a cluster, the client routes each command by its
//! key's slot and follows the cluster through failovers; keys a script
//! touches together share a hash tag (see [`RedisTier::tagged`]), so that
//! they live in one slot.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use failsafe::backoff::{self, Exponential};
use failsafe::failure_policy::{consecutive_failures, ConsecutiveFailures};
use failsafe::{Instrument, StateMachine};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::{Result, SearchError};

/// Consecutive failures that open the breaker.
const FAILURES_TO_OPEN: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }

    fn from_u8(v: u8) -> BreakerState {
        match v {
            1 => BreakerState::Open,
            2 => BreakerState::HalfOpen,
            _ => BreakerState::Closed,
        }
    }
}

/// Logs and measures the breaker's transitions.
#[derive(Debug, Clone, Default)]
struct Transitions(Arc<AtomicU8>);

impl Transitions {
    fn enter(&self, state: BreakerState) {
        let previous = BreakerState::from_u8(self.0.swap(state as u8, Ordering::AcqRel));
        if previous == state {
            return;
        }
        metrics::gauge!("cache_redis_breaker_state").set(state as u8 as f64);
        metrics::counter!("cache_redis_breaker_transitions_total", "to" => state.as_str())
            .increment(1);
        match state {
            BreakerState::Open => {
                tracing::warn!(
                    from = previous.as_str(),
                    "redis circuit open; serving from l1 and the index"
                )
            }
            BreakerState::HalfOpen => tracing::info!("redis circuit half open; probing"),
            BreakerState::Closed => tracing::info!("redis circuit closed; redis is back"),
        }
    }
}

impl Instrument for Transitions {
    fn on_call_rejected(&self) {
        metrics::counter!("cache_redis_skipped_total").increment(1);
    }
    fn on_open(&self) {
        self.enter(BreakerState::Open);
    }
    fn on_half_open(&self) {
        self.enter(BreakerState::HalfOpen);
    }
    fn on_closed(&self) {
        self.enter(BreakerState::Closed);
    }
}

type Breaker = StateMachine<ConsecutiveFailures<Exponential>, Transitions>;

/// A connection to one node or to a cluster, for the commands and scripts
/// the tiers run (both kinds speak `ConnectionLike`).
#[derive(Clone)]
pub enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

/// Where the connection comes from.
#[derive(Clone)]
enum Nodes {
    /// Reconnects by itself; connects on first use.
    Single(ConnectionManager),
    /// Connected by the first call (within its timeout); a failed attempt
    /// is retried by the next.
    Cluster {
        client: Arc<ClusterClient>,
        conn: Arc<tokio::sync::OnceCell<ClusterConnection>>,
    },
}

impl Nodes {
    async fn connection(&self) -> redis::RedisResult<Connection> {
        match self {
            Nodes::Single(conn) => Ok(Connection::Single(conn.clone())),
            Nodes::Cluster { client, conn } => {
                let conn = conn
                    .get_or_try_init(|| client.get_async_connection())
                    .await?;
                Ok(Connection::Cluster(conn.clone()))
            }
        }
    }
}

/// The cluster's seed nodes, if `url` names a cluster. In
/// `redis+cluster://[user:password@]h1:p1,h2:p2` the credentials are
/// written once and apply to every node (the client refuses seeds with
/// different passwords).
fn cluster_nodes(url: &str) -> Option<Vec<String>> {
    if let Some(rest) = url.strip_prefix("redis+cluster://") {
        let (credentials, hosts) = match rest.rsplit_once('@') {
            Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
            None => (String::new(), rest),
        };
        return Some(
            hosts
                .split(',')
                .map(|host| format!("redis://{credentials}{}", host.trim()))
                .collect(),
        );
    }
    url.contains(',')
        .then(|| url.split(',').map(|node| node.trim().to_owned()).collect())
}

#[derive(Clone)]
pub struct RedisTier {
    nodes: Nodes,
    /// `{prefix}:`; every key chaja writes starts with it.
    pub prefix: Arc<str>,
    timeout: Duration,
    breaker: Breaker,
    state: Transitions,
}

impl RedisTier {
    /// Connects lazily: a Redis that is down at start only costs the tier.
    pub fn new(url: &str, prefix: &str, timeout: Duration) -> Result<RedisTier> {
        let invalid =
            |e: redis::RedisError| SearchError::Config(format!("REDIS_URL is invalid: {e}"));
        if prefix.contains(['{', '}']) {
            return Err(SearchError::Config(
                "CHAJA_CACHE_PREFIX must not contain braces: they make Redis Cluster hash tags"
                    .to_owned(),
            ));
        }
        let nodes = match cluster_nodes(url) {
            Some(seeds) => Nodes::Cluster {
                client: Arc::new(
                    ClusterClient::builder(seeds)
                        .connection_timeout(timeout)
                        .response_timeout(timeout)
                        // A redirect (MOVED after a failover) is a retry.
                        .retries(3)
                        .build()
                        .map_err(invalid)?,
                ),
                conn: Arc::default(),
            },
            None => {
                let client = redis::Client::open(url).map_err(invalid)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1);
                Nodes::Single(
                    ConnectionManager::new_lazy_with_config(client, config).map_err(invalid)?,
                )
            }
        };
        let state = Transitions::default();
        let policy = consecutive_failures(
            FAILURES_TO_OPEN,
            backoff::exponential(Duration::from_secs(1), Duration::from_secs(10)),
        );
        let breaker = failsafe::Config::new()
            .failure_policy(policy)
            .instrument(state.clone())
            .build();
        Ok(RedisTier {
            nodes,
            prefix: format!("{prefix}:").into(),
            timeout,
            breaker,
            state,
        })
    }

    /// The same connection and breaker, with keys under `{prefix}{ns}:`, so
    /// that two users of one shape of data (trending, zero results) do not
    /// share keys.
    pub fn namespaced(&self, ns: &str) -> RedisTier {
        RedisTier {
            prefix: format!("{}{ns}:", self.prefix).into(),
            ..self.clone()
        }
    }

    /// `{prefix}{ns}:` made a hash tag, `{{prefix}{ns}}:`: every key under
    /// it lives in one cluster slot, so one script may touch them all.
    pub fn tagged(&self, ns: &str) -> String {
        format!("{{{}{ns}}}:", self.prefix)
    }

    pub fn breaker_state(&self) -> BreakerState {
        BreakerState::from_u8(self.state.0.load(Ordering::Acquire))
    }

    /// Runs one command or script on a connection, bounded by the timeout;
    /// `None` when the breaker is open or the call failed.
    pub async fn call<T, F, Fut>(&self, command: F) -> Option<T>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        if !self.breaker.is_call_permitted() {
            return None;
        }
        let call = async {
            let conn = self.nodes.connection().await?;
            command(conn).await
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => {
                self.breaker.on_success();
                Some(value)
            }
            Ok(Err(e)) => {
                self.failed(&e.to_string());
                None
            }
            Err(_) => {
                self.failed("timed out");
                None
            }
        }
    }

    fn failed(&self, error: &str) {
        metrics::counter!("cache_redis_errors_total").increment(1);
        tracing::debug!(error, "redis call failed");
        self.breaker.on_error();
    }
}

#[cfg(test)]
mod tests {
    use super::cluster_nodes;

    #[test]
    fn cluster_urls_name_every_seed_with_the_same_credentials() {
        assert_eq!(cluster_nodes("redis://127.0.0.1:6379"), None);
        assert_eq!(
            cluster_nodes("redis+cluster://:secret@h1:7000,h2:7001").unwrap(),
            ["redis://:secret@h1:7000", "redis://:secret@h2:7001"]
        );
        assert_eq!(
            cluster_nodes("redis+cluster://h1:7000, h2:7001").unwrap(),
            ["redis://h1:7000", "redis://h2:7001"]
        );
        assert_eq!(
            cluster_nodes("redis://h1:7000,redis://h2:7001").unwrap(),
            ["redis://h1:7000", "redis://h2:7001"]
        );
    }
}
