//! A randomized, Jepsen-style checker for the mirror.
//!
//! One run starts a private MariaDB, a private Redis and the real `chaja
//! serve` binary, lets several writers change rows with plain SQL in
//! explicit transactions (some held open past the gap grace, some rolled
//! back) while faults are injected (rebuilds, kill -9 of the server, a
//! MariaDB crash, Redis frozen), and checks the search API against what the
//! writers know was committed: during the run for changes older than the
//! documented lag bound, and after the run for every row in the tables.
//!
//! The check does not use chaja's own `verify` (which compares `updated_at`
//! and would not see content that changed without it): every row carries
//! tokens that only it contains, and the search API, which answers exact
//! substrings with exact totals, must find each row once, in its current
//! version, and never a row that is gone.
//!
//! `checker_short` runs in CI; `checker_soak` (ignored) repeats runs with new
//! seeds for `CHAJA_SOAK_SECS`. A failing run prints its seed; run it again
//! with `CHAJA_CHECKER_SEED=<seed>` (the writers' choices and the fault plan
//! follow from the seed, the timing does not).
//!
//! By job: `model` (the rows and what the writers know was committed),
//! `writers` (the concurrent writers), `faults` (what is injected, and
//! when), `env` (the private MariaDB, Redis and server), `http` (the search
//! API as the checks see it) and `check` (the checks, during the run and
//! against the tables after it). Here: a run's settings, its outcome, the
//! run itself and the tests.

mod check;
mod env;
mod faults;
mod http;
mod model;
mod writers;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use sqlx::Connection;
use tokio_util::sync::CancellationToken;

use check::{quiesce, Check};
use env::{Env, Status};
use faults::{fault_schedule, FaultKind, Faults};
use model::Model;
use writers::{Owned, Writer, WriterStats};

/// The server's gap grace in these runs: short, so that transactions held
/// open for 4–8 s outlive it.
const GAP_GRACE_SECS: u64 = 3;
/// The documented bound on how long a committed change may take to become
/// searchable: the gap grace plus 10 s.
const LAG_BOUND: Duration = Duration::from_secs(GAP_GRACE_SECS + 10);

// ---------------------------------------------------------------------------
// Configuration and outcome
// ---------------------------------------------------------------------------

/// Which faults a run injects, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPlan {
    /// Every kind at least once, plus one or two more, spread over the run:
    /// the CI run, which must exercise everything in under a minute.
    EveryKind,
    /// A fault every 3–10 s, kill -9 of the server the most likely: the soak.
    KillHeavy,
}

#[derive(Debug, Clone)]
pub struct CheckerConfig {
    pub seed: u64,
    /// How long the writers write.
    pub duration: Duration,
    pub writers: usize,
    pub faults: bool,
    pub plan: FaultPlan,
    /// Whether about 5% of transactions stay open for 4–8 s, past the gap
    /// grace (`CHAJA_CHECKER_LONG_HOLDS=0` turns them off, to tell their
    /// divergences from others).
    pub long_holds: bool,
    /// How often the checker samples rows during the run.
    pub check_every: Duration,
    /// Longest wait, after the run, for the indexer to apply every outbox row.
    pub quiesce_deadline: Duration,
}

impl CheckerConfig {
    /// The CI run: under a minute of writes, every fault kind.
    pub fn short(seed: u64) -> CheckerConfig {
        let secs = std::env::var("CHAJA_CHECKER_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(50);
        let on = |name: &str| std::env::var(name).map_or(true, |v| v != "0");
        CheckerConfig {
            seed,
            duration: Duration::from_secs(secs),
            writers: 8,
            faults: on("CHAJA_CHECKER_FAULTS"),
            long_holds: on("CHAJA_CHECKER_LONG_HOLDS"),
            plan: FaultPlan::EveryKind,
            check_every: Duration::from_secs(1),
            quiesce_deadline: Duration::from_secs(60),
        }
    }

    /// One run of the soak.
    pub fn soak(seed: u64, duration: Duration) -> CheckerConfig {
        CheckerConfig {
            duration,
            plan: FaultPlan::KillHeavy,
            quiesce_deadline: Duration::from_secs(120),
            ..CheckerConfig::short(seed)
        }
    }
}

/// What one run did and found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub seed: u64,
    pub elapsed: Duration,
    pub writes: WriterStats,
    pub faults: BTreeMap<&'static str, u32>,
    /// When each fault ran, seconds from the start of the writes.
    pub timeline: Vec<String>,
    /// Rows sampled by the checker during the run.
    pub sampled: u64,
    /// Rows in the tables at the end, and rows gone, that the final check searched.
    pub final_rows: usize,
    pub final_gone: usize,
    /// Times the server said it healed duplicates (today's binary does so
    /// every housekeeping unless `CHAJA_HEAL_DUPLICATES=false` is honoured).
    pub heals: usize,
    pub violations: Vec<String>,
    /// The run's directory (server log, index), kept when something diverged.
    pub kept: Option<PathBuf>,
}

impl Outcome {
    pub fn summary(&self) -> String {
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!(
            "checker seed {}: {:.0} s; transactions committed {}, rolled back {}, aborted by an error {}, unknown {}; \
             faults: {}; sampled during the run {}; final check {} rows, {} gone; heal messages {}; divergences {}",
            self.seed,
            self.elapsed.as_secs_f64(),
            self.writes.committed,
            self.writes.rolled_back,
            self.writes.aborted,
            self.writes.unknown,
            if faults.is_empty() { "none".to_owned() } else { faults.join(", ") },
            self.sampled,
            self.final_rows,
            self.final_gone,
            self.heals,
            self.violations.len(),
        )
    }
}

/// Divergences found so far, each message carrying the seed.
#[derive(Clone)]
struct Violations {
    seed: u64,
    found: Arc<Mutex<Vec<String>>>,
}

impl Violations {
    fn new(seed: u64) -> Violations {
        Violations {
            seed,
            found: Arc::default(),
        }
    }

    fn record(&self, message: impl Into<String>) {
        let message = format!(
            "{} (seed {}; replay with CHAJA_CHECKER_SEED={})",
            message.into(),
            self.seed,
            self.seed
        );
        eprintln!("checker divergence: {message}");
        self.found.lock().unwrap().push(message);
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.found.lock().unwrap())
    }
}

// ---------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------

/// One checker run; never panics on a divergence, returns them.
pub async fn run(config: CheckerConfig) -> Outcome {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let status = Arc::new(Status::default());
    let violations = Violations::new(config.seed);
    let run = (config.seed % 1_000_000_000).to_string();
    let env = Env::start(dir.path(), status.clone()).await;

    let mut conn = env.connect().await.expect("MariaDB answers");
    let user = sqlx::query("INSERT INTO users (name) VALUES ('checker')")
        .execute(&mut conn)
        .await
        .expect("insert the user")
        .last_insert_id() as i64;
    let _ = conn.close().await;

    // Times in messages (commits, faults) count from here.
    let writes_started = Instant::now();
    let model = Arc::new(Mutex::new(Model::new(writes_started)));
    let stop_writers = CancellationToken::new();
    let stop_faults = CancellationToken::new();
    let stop_check = CancellationToken::new();
    let writers: Vec<_> = (0..config.writers)
        .map(|index| {
            let writer = Writer {
                index,
                run: run.clone(),
                user,
                url: env.database_url.clone(),
                rng: StdRng::seed_from_u64(config.seed ^ index as u64),
                model: model.clone(),
                violations: violations.clone(),
                conn: None,
                owned: Owned::default(),
                review_keys: HashMap::new(),
                next_n: 0,
                next_version: 0,
                long_holds: config.long_holds,
                stats: WriterStats::default(),
            };
            tokio::spawn(writer.run(stop_writers.clone()))
        })
        .collect();
    let check = Check {
        http: env.http.clone(),
        run: run.clone(),
        violations: violations.clone(),
    };
    let sampler = tokio::spawn(check.sample_loop(
        model.clone(),
        status.clone(),
        config.seed,
        config.check_every,
        stop_check.clone(),
    ));
    let mut fault_rng = StdRng::seed_from_u64(config.seed ^ 0x0fa0_17ed);
    let schedule = fault_schedule(&config, &mut fault_rng);
    let faults = Faults {
        env,
        rng: fault_rng,
        run: run.clone(),
        violations: violations.clone(),
        counts: BTreeMap::new(),
        timeline: Vec::new(),
    };
    let faults = tokio::spawn(faults.run(schedule, writes_started, stop_faults.clone()));

    tokio::time::sleep(config.duration).await;
    stop_faults.cancel();
    stop_writers.cancel();
    stop_check.cancel();
    let (mut env, fault_counts, timeline) = faults.await.expect("fault task");
    let mut writes = WriterStats::default();
    for writer in writers {
        writes.add(writer.await.expect("writer task"));
    }
    let sampled = sampler.await.expect("check task");

    env.ensure_up(&violations).await;
    if let Err(e) = quiesce(&env, config.quiesce_deadline).await {
        violations.record(e);
    }
    let check = Check {
        http: env.http.clone(),
        run,
        violations: violations.clone(),
    };
    let model = std::mem::replace(&mut *model.lock().unwrap(), Model::new(Instant::now()));
    let (final_rows, final_gone) = check.everything(&env, &model).await;
    env.kill_server();

    let heals = std::fs::read_to_string(&env.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("rows indexed more than once"))
        .count();
    let violations = violations.take();
    let kept = (!violations.is_empty()).then(|| dir.keep());
    drop(env);
    Outcome {
        seed: config.seed,
        elapsed: started.elapsed(),
        writes,
        faults: fault_counts,
        timeline,
        sampled,
        final_rows,
        final_gone,
        heals,
        violations,
        kept,
    }
}

fn seed_from_env() -> u64 {
    std::env::var("CHAJA_CHECKER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random)
}

fn report(outcome: &Outcome) -> String {
    let mut text = outcome.summary();
    if !outcome.timeline.is_empty() {
        text.push_str(&format!("\n  faults at: {}", outcome.timeline.join(", ")));
    }
    if let Some(dir) = &outcome.kept {
        text.push_str(&format!(
            "\n  server log and index kept in {}",
            dir.display()
        ));
    }
    for violation in &outcome.violations {
        text.push_str(&format!("\n  - {violation}"));
    }
    text
}

/// The CI run: ~50 s of writes by 8 writers with every fault kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checker_short() {
    let seed = seed_from_env();
    println!("checker_short: seed {seed} (replay with CHAJA_CHECKER_SEED={seed})");
    let config = CheckerConfig::short(seed);
    let faults = config.faults;
    let mut outcome = run(config).await;
    for kind in FaultKind::ALL.into_iter().filter(|_| faults) {
        if !outcome.faults.contains_key(kind.name()) {
            outcome.violations.push(format!(
                "the fault {} never fired (seed {seed}; replay with CHAJA_CHECKER_SEED={seed})",
                kind.name()
            ));
        }
    }
    let report = report(&outcome);
    println!("{report}");
    assert!(
        outcome.violations.is_empty(),
        "the mirror diverged:\n{report}"
    );
}

/// Runs with new seeds until `CHAJA_SOAK_SECS` (default 600) are up, each
/// `CHAJA_SOAK_RUN_SECS` (default 120) of writes with kill -9 the most
/// frequent fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: cargo test --release --test api checker_soak -- --ignored --nocapture"]
async fn checker_soak() {
    let env_secs = |name: &str, default: u64| {
        Duration::from_secs(
            std::env::var(name)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(default),
        )
    };
    let total = env_secs("CHAJA_SOAK_SECS", 600);
    let per_run = env_secs("CHAJA_SOAK_RUN_SECS", 120);
    let started = Instant::now();
    let mut runs = 0;
    let mut writes = WriterStats::default();
    let mut faults: BTreeMap<&'static str, u32> = BTreeMap::new();
    let mut divergences = Vec::new();
    // The first seed may come from the environment, to replay a soak.
    let mut seed = seed_from_env();
    while started.elapsed() + Duration::from_secs(30) < total {
        let left = total.saturating_sub(started.elapsed());
        let duration = per_run.min(left.saturating_sub(Duration::from_secs(20)));
        let outcome = run(CheckerConfig::soak(seed, duration)).await;
        runs += 1;
        println!("soak run {runs}: {}", report(&outcome));
        writes.add(outcome.writes);
        for (kind, n) in &outcome.faults {
            *faults.entry(kind).or_default() += n;
        }
        divergences.extend(outcome.violations);
        seed = rand::random();
    }
    let faults: Vec<String> = faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let summary = format!(
        "soak: {runs} runs in {:.0} s; transactions committed {}, rolled back {}, aborted {}, unknown {}; faults: {}; divergences {}",
        started.elapsed().as_secs_f64(),
        writes.committed,
        writes.rolled_back,
        writes.aborted,
        writes.unknown,
        faults.join(", "),
        divergences.len()
    );
    println!("{summary}");
    assert!(
        divergences.is_empty(),
        "{summary}:\n  - {}",
        divergences.join("\n  - ")
    );
}
