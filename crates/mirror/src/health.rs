//! The database's health as probes see it, checked in the background.
//!
//! `/readyz` and `/metrics` are anonymous or cheap to call, and a balancer,
//! a scraper or an attacker may call them as often as it likes. If each
//! call pinged the database it would take a connection from the pool that
//! writes and the indexer use: a few dozen probes at once would starve
//! them. Instead one task checks the database once a second on a pool of
//! its own (one connection), and probes read what it found last.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::Progress;
use chaja_store::{outbox, Db};

/// How often the database is checked.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long one check may wait for the database.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// A finding older than this (the checker is stuck on a database that
/// does not answer) no longer says the database is up.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// What the last check found.
#[derive(Debug, Clone, Copy)]
pub struct Finding {
    /// The database answered within the timeout.
    pub database: bool,
    /// The outbox rows the indexer has not read (see
    /// `Progress::unread_after`); `None` when the database did not answer.
    pub backlog: Option<Backlog>,
    /// The read replica the indexer tails, when one is configured.
    pub replica: Option<ReplicaFinding>,
    pub at: Instant,
}

/// The outbox rows the indexer has not read, as one check found them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    pub rows: i64,
    /// The age of the oldest of them when the check answered, in seconds;
    /// 0 when there are none. Taken at the check, not when a probe reads
    /// it: a probe up to a second after the check would otherwise add its
    /// wait to the age of a row the indexer may have applied since.
    pub seconds_behind: f64,
}

/// How far the read replica is behind the primary, in outbox terms: the
/// ids the primary has past the replica's newest, and how long ago the
/// primary's newest id was one the replica has now. Both come from this
/// process's own observations, once a second, on one clock: no row's
/// `created_at` (an insert time, which a long transaction makes old) and
/// no clock of another machine.
#[derive(Debug, Clone, Copy)]
pub struct ReplicaFinding {
    /// Both the replica and the primary answered.
    pub up: bool,
    pub behind_rows: Option<i64>,
    pub seconds_behind: Option<f64>,
    /// Down, or behind by more than the configured bound: not ready.
    pub lagging: bool,
}

/// The read replica to watch, and the lag past which it counts as lagging.
#[derive(Debug, Clone)]
pub struct ReplicaWatch {
    pub db: Db,
    pub max_lag: Duration,
}

/// The last finding, shared by the checker and the probes.
#[derive(Debug, Clone, Default)]
pub struct Health(Arc<Mutex<Option<Finding>>>);

impl Health {
    /// Starts from what the caller knows (the migration at start reached
    /// the database or did not), so a probe right after start has an answer.
    pub fn starting(database: bool) -> Health {
        let health = Health::default();
        health.set(Finding {
            database,
            backlog: None,
            replica: None,
            at: Instant::now(),
        });
        health
    }

    fn set(&self, finding: Finding) {
        *self.0.lock().expect("health lock") = Some(finding);
    }

    /// The last finding, if recent enough to go by.
    pub fn current(&self) -> Option<Finding> {
        let finding = (*self.0.lock().expect("health lock"))?;
        (finding.at.elapsed() < FRESH_FOR).then_some(finding)
    }

    /// Checks every `CHECK_EVERY` until `shutdown`. `db` should be a pool
    /// of its own (see the module docs).
    pub async fn watch(
        self,
        db: Db,
        replica: Option<ReplicaWatch>,
        progress: Arc<Progress>,
        shutdown: CancellationToken,
    ) {
        let mut primary_seen = std::collections::VecDeque::new();
        loop {
            let mut finding = check(&db, progress.unread_after()).await;
            if let Some(replica) = &replica {
                finding.replica = Some(check_replica(&db, replica, &mut primary_seen).await);
            }
            self.set(finding);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(CHECK_EVERY) => {}
            }
        }
    }
}

async fn check(db: &Db, applied: i64) -> Finding {
    let backlog = tokio::time::timeout(CHECK_TIMEOUT, outbox::backlog(db, applied))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|(rows, oldest)| {
            let now = chaja_core::clock::now_ms();
            Backlog {
                rows,
                seconds_behind: oldest.map_or(0.0, |t| (now - t).max(0) as f64 / 1000.0),
            }
        });
    // The backlog query answering is the ping; a database that answers a
    // ping but not it (a missing table) is still up.
    let database = backlog.is_some()
        || matches!(
            tokio::time::timeout(CHECK_TIMEOUT, db.ping()).await,
            Ok(Ok(()))
        );
    Finding {
        database,
        backlog,
        replica: None,
        at: Instant::now(),
    }
}

/// The primary's newest outbox id as seen at each check, for
/// [`REPLICA_MEMORY`]; the oldest first.
type Seen = std::collections::VecDeque<(Instant, i64)>;

/// How far back the primary's positions are remembered: a replica behind
/// by more is reported as behind by at least this.
const REPLICA_MEMORY: Duration = Duration::from_secs(600);

/// The primary's newest outbox id and the replica's, read now; the lag is
/// the time since the primary was at a position the replica has reached.
async fn check_replica(primary: &Db, replica: &ReplicaWatch, seen: &mut Seen) -> ReplicaFinding {
    let positions = async {
        let on_primary = outbox::max_seq(primary).await?;
        let on_replica = outbox::max_seq(&replica.db).await?;
        Ok::<_, crate::MirrorError>((on_primary, on_replica))
    };
    let Ok(Ok((on_primary, on_replica))) = tokio::time::timeout(CHECK_TIMEOUT, positions).await
    else {
        return ReplicaFinding {
            up: false,
            behind_rows: None,
            seconds_behind: None,
            lagging: true,
        };
    };
    let now = Instant::now();
    seen.push_back((now, on_primary));
    while seen
        .front()
        .is_some_and(|(at, _)| now.duration_since(*at) > REPLICA_MEMORY)
    {
        seen.pop_front();
    }
    let since = seen
        .iter()
        .rev()
        .find(|(_, position)| *position <= on_replica)
        .or(seen.front())
        .map_or(now, |(at, _)| *at);
    let seconds = now.duration_since(since).as_secs_f64();
    ReplicaFinding {
        up: true,
        behind_rows: Some((on_primary - on_replica).max(0)),
        seconds_behind: Some(seconds),
        lagging: seconds > replica.max_lag.as_secs_f64(),
    }
}
