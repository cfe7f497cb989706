//! The environment of a run: MariaDB, Redis and the `chaja serve` binary,
//! all private to it, and whether a fault is in progress.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::mysql::MySqlConnection;
use sqlx::Connection;

use super::http::Http;
use super::{Violations, GAP_GRACE_SECS};
use crate::helpers::{free_port, PrivateMariaDb, RedisServer, Server};

/// Whether a fault is in progress, and how long the server has been up: the
/// checker samples only in quiet times, and discards a sample if a fault
/// started while it searched.
#[derive(Default)]
pub(super) struct Status {
    active: AtomicUsize,
    /// Bumped when a fault starts or ends.
    epoch: AtomicU64,
    server_up_since: Mutex<Option<Instant>>,
}

impl Status {
    pub(super) fn begin_fault(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn end_fault(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    fn server_up(&self, up: bool) {
        *self.server_up_since.lock().unwrap() = up.then(Instant::now);
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// The current epoch when no fault is active and the server has been up
    /// for longer than `bound`.
    pub(super) fn quiet(&self, bound: Duration) -> Option<u64> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        let up = (*self.server_up_since.lock().unwrap())?;
        (self.active.load(Ordering::SeqCst) == 0 && up.elapsed() > bound).then_some(epoch)
    }

    pub(super) fn still(&self, epoch: u64) -> bool {
        self.epoch.load(Ordering::SeqCst) == epoch && self.active.load(Ordering::SeqCst) == 0
    }
}

pub(super) struct Env {
    pub(super) mariadb: PrivateMariaDb,
    redis: RedisServer,
    redis_paused: bool,
    server: Option<Server>,
    pub(super) database_url: String,
    index_dir: PathBuf,
    pub(super) log: PathBuf,
    port: u16,
    pub(super) http: Http,
    pub(super) status: Arc<Status>,
}

impl Env {
    pub(super) async fn start(dir: &Path, status: Arc<Status>) -> Env {
        let mut mariadb = PrivateMariaDb::install();
        mariadb.start().await;
        let mut admin = MySqlConnection::connect(&mariadb.url()).await.unwrap();
        sqlx::Executor::execute(
            &mut admin,
            "CREATE DATABASE chaja_chk CHARACTER SET utf8mb4",
        )
        .await
        .unwrap();
        admin.close().await.unwrap();
        let database_url = format!("mysql://root@127.0.0.1:{}/chaja_chk", mariadb.port);
        let redis = RedisServer::start();
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", redis.port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "private redis did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let port = free_port();
        let mut env = Env {
            mariadb,
            redis,
            redis_paused: false,
            server: None,
            database_url,
            index_dir: dir.join("index"),
            log: dir.join("server.log"),
            port,
            http: Http::new(port),
            status,
        };
        env.start_server().await.expect("chaja serve starts");
        env
    }

    /// Settings shared by `serve` and `reindex`.
    pub(super) fn store_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DATABASE_URL", self.database_url.clone()),
            ("CHAJA_INDEX_DIR", self.index_dir.display().to_string()),
            ("CHAJA_KO_DIC", "off".to_owned()),
            ("CHAJA_WRITER_MEMORY_MB", "32".to_owned()),
        ]
    }

    fn server_env(&self) -> Vec<(&'static str, String)> {
        let mut env = self.store_env();
        env.extend([
            ("CHAJA_BIND", format!("127.0.0.1:{}", self.port)),
            ("REDIS_URL", self.redis.url()),
            ("CHAJA_POLL_MS", "20".to_owned()),
            ("CHAJA_GAP_GRACE_SECS", GAP_GRACE_SECS.to_string()),
            ("CHAJA_CACHE_MAX_STALE_MS", "0".to_owned()),
            ("CHAJA_CACHE_GRACE_MS", "0".to_owned()),
            ("CHAJA_HOUSEKEEPING_MS", "1000".to_owned()),
            // Duplicates must show, not be healed behind the checker's back.
            ("CHAJA_HEAL_DUPLICATES", "false".to_owned()),
        ]);
        env
    }

    /// Starts `chaja serve` on the run's port and waits for /healthz.
    pub(super) async fn start_server(&mut self) -> Result<(), String> {
        for _attempt in 0..3 {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .ok();
            let envs = self.server_env();
            self.server = Some(Server::start_logged(&envs, log));
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Some(Ok(Some(_))) = self.server.as_mut().map(|s| s.0.try_wait()) {
                    break; // exited: the port may still be taken; try again
                }
                if self.http.healthy().await {
                    self.status.server_up(true);
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            self.kill_server();
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err("chaja serve did not answer /healthz within 60 s (three attempts)".to_owned())
    }

    pub(super) fn kill_server(&mut self) {
        self.status.server_up(false);
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
    }

    pub(super) fn signal_redis(&mut self, signal: &str) {
        let _ = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.redis.pid().to_string())
            .status();
        self.redis_paused = signal == "STOP";
    }

    /// After the run: everything up again. A server that exited by itself
    /// is a finding.
    pub(super) async fn ensure_up(&mut self, violations: &Violations) {
        if !self.mariadb.is_running() {
            self.mariadb.start().await;
        }
        if self.redis_paused {
            self.signal_redis("CONT");
        }
        if let Some(Ok(Some(status))) = self.server.as_mut().map(|s| s.0.try_wait()) {
            violations.record(format!("chaja serve exited by itself ({status})"));
            self.server = None;
        }
        if self.server.is_none() {
            if let Err(e) = self.start_server().await {
                violations.record(e);
            }
        }
    }

    pub(super) async fn connect(&self) -> Result<MySqlConnection, String> {
        match tokio::time::timeout(
            Duration::from_secs(5),
            MySqlConnection::connect(&self.database_url),
        )
        .await
        {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("connect timed out".to_owned()),
        }
    }
}
