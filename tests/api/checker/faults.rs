//! The faults a run injects (rebuilds, kill -9 of the server, a MariaDB
//! crash, Redis frozen) and when.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::env::Env;
use super::{CheckerConfig, FaultPlan, Violations};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `chaja reindex` from the command line; the server adopts the result.
    CliReindex,
    /// `POST /api/admin/reindex`.
    AdminReindex,
    /// SIGKILL of the server, a pause, a restart.
    Kill9,
    /// SIGKILL of MariaDB (a crash), a pause, a restart.
    MariaDbRestart,
    /// Redis frozen with SIGSTOP for a few seconds.
    RedisPause,
}

impl FaultKind {
    pub const ALL: [FaultKind; 5] = [
        FaultKind::CliReindex,
        FaultKind::AdminReindex,
        FaultKind::Kill9,
        FaultKind::MariaDbRestart,
        FaultKind::RedisPause,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::CliReindex => "cli-reindex",
            FaultKind::AdminReindex => "admin-reindex",
            FaultKind::Kill9 => "kill-9",
            FaultKind::MariaDbRestart => "mariadb-restart",
            FaultKind::RedisPause => "redis-pause",
        }
    }
}

/// When, from the start of the run, each fault starts (or later, if the one
/// before is still going).
pub(super) fn fault_schedule(
    config: &CheckerConfig,
    rng: &mut StdRng,
) -> Vec<(Duration, FaultKind)> {
    if !config.faults {
        return Vec::new();
    }
    let total = config.duration.as_secs_f64();
    match config.plan {
        FaultPlan::EveryKind => {
            let mut kinds = FaultKind::ALL.to_vec();
            for _ in 0..rng.random_range(1..=2) {
                kinds.push(FaultKind::ALL[rng.random_range(0..FaultKind::ALL.len())]);
            }
            kinds.shuffle(rng);
            // Leave the last 10% free so the last fault ends within the run.
            let slot = total * 0.9 / kinds.len() as f64;
            kinds
                .into_iter()
                .enumerate()
                .map(|(i, kind)| {
                    let at = slot * (i as f64 + rng.random_range(0.1..0.6));
                    (Duration::from_secs_f64(at), kind)
                })
                .collect()
        }
        FaultPlan::KillHeavy => {
            let mut at = 0.0;
            let mut plan = Vec::new();
            loop {
                at += rng.random_range(3.0..10.0);
                if at > total - 5.0 {
                    return plan;
                }
                let kind = match rng.random_range(0..100) {
                    0..40 => FaultKind::Kill9,
                    40..55 => FaultKind::CliReindex,
                    55..70 => FaultKind::AdminReindex,
                    70..85 => FaultKind::MariaDbRestart,
                    _ => FaultKind::RedisPause,
                };
                plan.push((Duration::from_secs_f64(at), kind));
            }
        }
    }
}

pub(super) struct Faults {
    pub(super) env: Env,
    pub(super) rng: StdRng,
    pub(super) run: String,
    pub(super) violations: Violations,
    pub(super) counts: BTreeMap<&'static str, u32>,
    /// "kind start–end", seconds from the start of the writes.
    pub(super) timeline: Vec<String>,
}

impl Faults {
    /// Injects the schedule's faults one at a time; returns the environment
    /// (everything running again) when the schedule ends or `stop` fires.
    pub(super) async fn run(
        mut self,
        schedule: Vec<(Duration, FaultKind)>,
        started: Instant,
        stop: CancellationToken,
    ) -> (Env, BTreeMap<&'static str, u32>, Vec<String>) {
        for (at, kind) in schedule {
            tokio::select! {
                _ = tokio::time::sleep_until((started + at).into()) => {}
                _ = stop.cancelled() => break,
            }
            *self.counts.entry(kind.name()).or_default() += 1;
            let from = started.elapsed().as_secs_f64();
            self.env.status.begin_fault();
            self.inject(kind, &stop).await;
            self.env.status.end_fault();
            let to = started.elapsed().as_secs_f64();
            self.timeline
                .push(format!("{} {from:.1}–{to:.1} s", kind.name()));
        }
        (self.env, self.counts, self.timeline)
    }

    /// Waits `range` milliseconds, less if the run is stopping.
    async fn pause(&mut self, range: std::ops::Range<u64>, stop: &CancellationToken) {
        let wait = Duration::from_millis(self.rng.random_range(range));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.cancelled() => {}
        }
    }

    /// A search must answer while a store is down (the search path touches
    /// neither MariaDB nor, past its timeout, Redis).
    async fn search_answers(&self, during: &str) {
        let started = Instant::now();
        let token = format!("chk{}", self.run);
        match self.env.http.search(&token).await {
            Ok(_) if started.elapsed() < Duration::from_secs(3) => {}
            Ok(_) => self.violations.record(format!(
                "a search took {:.1} s during {during}",
                started.elapsed().as_secs_f64()
            )),
            Err(e) => self
                .violations
                .record(format!("a search failed during {during}: {e}")),
        }
    }

    async fn inject(&mut self, kind: FaultKind, stop: &CancellationToken) {
        match kind {
            FaultKind::CliReindex => {
                let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_chaja"))
                    .arg("reindex")
                    .envs(self.env.store_env())
                    .env("RUST_LOG", "warn")
                    .kill_on_drop(true)
                    .output();
                match tokio::time::timeout(Duration::from_secs(120), run).await {
                    Ok(Ok(output)) if output.status.success() => {}
                    Ok(Ok(output)) => {
                        let stderr = String::from_utf8_lossy(&output.stderr);
                        let tail: String =
                            stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
                        self.violations
                            .record(format!("chaja reindex failed ({}): {tail}", output.status));
                    }
                    Ok(Err(e)) => self
                        .violations
                        .record(format!("chaja reindex did not start: {e}")),
                    Err(_) => self
                        .violations
                        .record("chaja reindex ran for more than 120 s"),
                }
            }
            FaultKind::AdminReindex => {
                let before = self.env.http.generation().await;
                match self.env.http.admin_reindex().await {
                    Ok(202) => {
                        // Active until the new generation is live.
                        let deadline = Instant::now() + Duration::from_secs(30);
                        while Instant::now() < deadline && !stop.is_cancelled() {
                            let now = self.env.http.generation().await;
                            if now.is_some() && now != before {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                    Ok(409) => {}
                    Ok(status) => self
                        .violations
                        .record(format!("POST /api/admin/reindex answered {status}")),
                    Err(e) => self
                        .violations
                        .record(format!("POST /api/admin/reindex failed: {e}")),
                }
            }
            FaultKind::Kill9 => {
                self.env.kill_server();
                self.pause(200..2000, stop).await;
                if let Err(e) = self.env.start_server().await {
                    self.violations.record(e);
                }
            }
            FaultKind::MariaDbRestart => {
                self.env.mariadb.stop();
                self.pause(300..1000, stop).await;
                self.search_answers("a MariaDB outage").await;
                self.pause(500..3000, stop).await;
                self.env.mariadb.start().await;
            }
            FaultKind::RedisPause => {
                self.env.signal_redis("STOP");
                self.pause(300..1000, stop).await;
                self.search_answers("a Redis freeze").await;
                self.pause(1500..4000, stop).await;
                self.env.signal_redis("CONT");
            }
        }
    }
}
