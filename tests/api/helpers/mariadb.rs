//! Private MariaDB servers, each on its own port and data directory: one
//! to stop and start, one with a binary log, a replicated pair.

use std::time::{Duration, Instant};

use super::free_port;

/// A private MariaDB on its own port and data directory, so that stopping
/// it does not disturb the other tests.
pub struct PrivateMariaDb {
    datadir: tempfile::TempDir,
    pub port: u16,
    process: Option<std::process::Child>,
    /// Server options besides the defaults below (replication).
    options: Vec<String>,
}

impl PrivateMariaDb {
    pub fn install() -> PrivateMariaDb {
        let datadir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=root", "--skip-test-db"])
            // Root logs in with no password when grants are on.
            .arg("--auth-root-authentication-method=normal")
            .arg(format!("--datadir={}", datadir.path().display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("mariadb-install-db (MariaDB server package) is installed");
        assert!(status.success());
        let port = free_port();
        PrivateMariaDb {
            datadir,
            port,
            process: None,
            options: vec![
                "--skip-grant-tables".to_owned(),
                "--skip-log-bin".to_owned(),
            ],
        }
    }

    /// A server with a binary log and its grants on, started: MySQL 8's and
    /// MariaDB's rule for triggers applies (SUPER, or
    /// `log_bin_trust_function_creators`). Root logs in with no password.
    pub async fn with_binary_log() -> PrivateMariaDb {
        let mut server = PrivateMariaDb::install();
        server.options = [
            "--skip-name-resolve",
            "--server-id=1",
            "--log-bin",
            "--log-basename=binlog",
        ]
        .map(str::to_owned)
        .to_vec();
        server.start().await;
        server
    }

    /// A primary with a row-based binary log, and a replica of it that
    /// follows by GTID, both started. The primary keeps its grants (a
    /// trigger replicates with its definer, which must exist); root logs in
    /// with no password, and the replica logs in to the primary as root.
    pub async fn replicated_pair() -> (PrivateMariaDb, PrivateMariaDb) {
        let mut primary = PrivateMariaDb::install();
        primary.options = [
            "--skip-name-resolve",
            "--server-id=1",
            "--log-bin",
            "--log-basename=primary",
            "--binlog-format=ROW",
        ]
        .map(str::to_owned)
        .to_vec();
        let mut replica = PrivateMariaDb::install();
        replica.options = [
            "--skip-grant-tables",
            "--server-id=2",
            "--skip-log-bin",
            "--read-only=1",
        ]
        .map(str::to_owned)
        .to_vec();
        primary.start().await;
        replica.start().await;
        replica
            .admin(&format!(
                "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER='root', \
                 MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
                primary.port
            ))
            .await;
        replica.admin("START SLAVE").await;
        (primary, replica)
    }

    /// Runs one statement as root.
    pub async fn admin(&self, sql: &str) {
        let db = chaja_store::Db::connect_lazy(&self.url(), 1).unwrap();
        sqlx::query(sql).execute(&db.pool).await.unwrap();
        db.pool.close().await;
    }

    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/test", self.port)
    }

    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    pub async fn start(&mut self) {
        let dir: &std::path::Path = self.datadir.path();
        let child = std::process::Command::new("/usr/sbin/mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.display()))
            .arg(format!("--socket={}", dir.join("mysqld.sock").display()))
            .arg(format!("--port={}", self.port))
            .args(["--bind-address=127.0.0.1", "--user=root"])
            .args(&self.options)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        self.process = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        let admin = format!("mysql://root@127.0.0.1:{}/mysql", self.port);
        loop {
            let db = chaja_store::Db::connect_lazy(&admin, 1).unwrap();
            if sqlx::query("CREATE DATABASE IF NOT EXISTS test")
                .execute(&db.pool)
                .await
                .is_ok()
            {
                db.pool.close().await;
                return;
            }
            assert!(Instant::now() < deadline, "private MariaDB did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateMariaDb {
    fn drop(&mut self) {
        self.stop();
    }
}
