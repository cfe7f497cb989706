//! A private MariaDB per test, with a binary log, on a free port and a
//! temporary data directory; killed on drop.
//!
//! `mariadb-install-db` runs once into a template directory under the
//! target directory (kept across runs, so /tmp does not fill up), which
//! each server copies: installing takes seconds, copying milliseconds.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use chaja_binlog::{Event, Projection, Reader, Settings, TableName, Transaction};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

/// The options every test server runs with: a row-based log with column
/// names, as the reader needs.
pub const BINLOG: [&str; 4] = [
    "--log-bin",
    "--log-basename=binlog",
    "--binlog-format=ROW",
    "--binlog-row-metadata=FULL",
];

fn template() -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        // One per test binary (they run one after another), each made
        // whole before it is marked done.
        let binary = std::env::current_exe().unwrap();
        let name = binary.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mariadb-template-{name}"));
        let done = dir.join("chaja-template-done");
        if done.exists() {
            return dir;
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=root", "--skip-test-db"])
            // Root logs in with no password.
            .arg("--auth-root-authentication-method=normal")
            .arg(format!("--datadir={}", dir.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("mariadb-install-db (the MariaDB server package) is installed");
        assert!(status.success(), "mariadb-install-db failed");
        std::fs::write(&done, "").unwrap();
        dir
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct MariaDb {
    datadir: tempfile::TempDir,
    pub port: u16,
    pub server_id: u32,
    options: Vec<String>,
    process: Option<Child>,
}

impl MariaDb {
    /// A server with `server_id` 1 and the binary log of `BINLOG`.
    pub async fn start() -> MariaDb {
        MariaDb::start_with(1, &BINLOG).await
    }

    /// A server with these options (the binary log's among them).
    pub async fn start_with(server_id: u32, options: &[&str]) -> MariaDb {
        let datadir = tempfile::tempdir().unwrap();
        let status = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", template().display()))
            .arg(datadir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let _ = std::fs::remove_file(datadir.path().join("chaja-template-done"));
        let mut server = MariaDb {
            datadir,
            port: free_port(),
            server_id,
            options: options.iter().map(|option| (*option).to_owned()).collect(),
            process: None,
        };
        server.run().await;
        server
    }

    /// Starts the server process on the same data and port.
    pub async fn run(&mut self) {
        let dir = self.datadir.path();
        let child = Command::new("/usr/sbin/mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.display()))
            .arg(format!("--socket={}", dir.join("mysqld.sock").display()))
            .arg(format!("--port={}", self.port))
            .args([
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-name-resolve",
            ])
            .arg(format!("--server-id={}", self.server_id))
            // Small and quick: these servers hold a few rows.
            .args([
                "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=16M",
            ])
            .args([
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_unicode_ci",
            ])
            .args(&self.options)
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.join("error.log")).unwrap(),
            ))
            .spawn()
            .expect("/usr/sbin/mariadbd is installed");
        self.process = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let admin = format!("mysql://root@127.0.0.1:{}/mysql", self.port);
        loop {
            if let Ok(mut conn) = Conn::from_url(admin.as_str()).await {
                conn.query_drop("CREATE DATABASE IF NOT EXISTS test")
                    .await
                    .unwrap();
                let _ = conn.disconnect().await;
                return;
            }
            let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
            assert!(
                Instant::now() < deadline,
                "private MariaDB did not start:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills the server at once (SIGKILL): a crash, not a shutdown.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/test", self.port)
    }

    pub fn url_as(&self, user: &str) -> String {
        format!("mysql://{user}@127.0.0.1:{}/test", self.port)
    }

    pub async fn conn(&self) -> Conn {
        Conn::from_url(self.url().as_str()).await.unwrap()
    }

    /// Runs statements, one connection, in order.
    pub async fn sql(&self, statements: &[&str]) {
        let mut conn = self.conn().await;
        for statement in statements {
            conn.query_drop(*statement)
                .await
                .unwrap_or_else(|error| panic!("{statement}: {error}"));
        }
        let _ = conn.disconnect().await;
    }

    /// The current binlog file and offset, as `SHOW MASTER STATUS` says.
    pub async fn master_status(&self) -> (String, u64) {
        let mut conn = self.conn().await;
        let row: (String, u64) = conn
            .query_first::<mysql_async::Row, _>("SHOW MASTER STATUS")
            .await
            .unwrap()
            .map(|row| (row.get(0).unwrap(), row.get(1).unwrap()))
            .unwrap();
        let _ = conn.disconnect().await;
        row
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reader settings for `test.<tables>` with a short heartbeat.
pub fn settings(server: &MariaDb, tables: &[&str]) -> Settings {
    let tables = tables
        .iter()
        .map(|table| TableName::new("test", *table))
        .collect();
    let mut settings = Settings::new(server.url(), 1_000_001, tables);
    settings.heartbeat = Duration::from_secs(1);
    settings
}

/// The next event, failing the test after 20 s.
pub async fn next<P: Projection>(reader: &mut Reader<P>) -> Event<P::Item>
where
    P::Item: std::fmt::Debug,
{
    match tokio::time::timeout(Duration::from_secs(20), reader.next()).await {
        Ok(Ok(event)) => event,
        Ok(Err(error)) => panic!("reader failed: {error}"),
        Err(_) => panic!("no event within 20 s"),
    }
}

/// The next transaction, skipping heartbeats (and failing on DDL).
pub async fn next_transaction<P: Projection>(reader: &mut Reader<P>) -> Transaction<P::Item>
where
    P::Item: std::fmt::Debug,
{
    loop {
        match next(reader).await {
            Event::Transaction(transaction) => return transaction,
            Event::Heartbeat(_) => continue,
            Event::Ddl(ddl) => panic!("expected a transaction, got {ddl:?}"),
        }
    }
}

/// Waits until the reader is caught up (the server's heartbeat) and
/// returns every transaction before it.
pub async fn drain<P: Projection>(reader: &mut Reader<P>) -> Vec<Transaction<P::Item>>
where
    P::Item: std::fmt::Debug,
{
    let mut transactions = Vec::new();
    loop {
        match next(reader).await {
            Event::Transaction(transaction) => transactions.push(transaction),
            Event::Heartbeat(heartbeat) if heartbeat.caught_up => return transactions,
            Event::Heartbeat(_) => continue,
            Event::Ddl(ddl) => panic!("unexpected {ddl:?}"),
        }
    }
}
