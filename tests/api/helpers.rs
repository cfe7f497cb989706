//! `spawn_app()`: a real server on port 0 with a fresh database and index.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chaja::app::App;
use chaja::config::{CacheArgs, DemoArgs, KeyArgs, LimitArgs, MirrorArgs, ServeArgs, StoreArgs};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use chaja_http::AppState;
use chaja_store::{outbox, Db};

use crate::http_client::{Method, RequestBuilder, StatusCode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Sqlite,
    MySql,
}

/// Generates one test per store from `async fn name(store: Store)`.
#[macro_export]
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::helpers::Store::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                super::$name($crate::helpers::Store::MySql).await
            }
        }
    )*};
}

/// The workspace's root, where the `chaja` package lives: the files the
/// tests read (`data/`, `deploy/`) are there.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The dictionary `.ci/run` builds; the morphology tests need it.
pub fn ko_dic() -> std::path::PathBuf {
    std::env::var_os("CHAJA_KO_DIC").map_or_else(
        || workspace_root().join("data/ko-dic"),
        std::path::PathBuf::from,
    )
}

/// Polls `holds` every 20 ms until it is true; fails the test with `what`
/// (what did not happen) after `within`.
pub async fn wait_until<F, Fut>(within: Duration, what: &str, mut holds: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !holds().await {
        assert!(Instant::now() < deadline, "after {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `sql` on `conn` in the plain text protocol: `BEGIN` and `COMMIT`
/// cannot be prepared.
pub async fn exec(conn: &mut sqlx::MySqlConnection, sql: &str) {
    sqlx::raw_sql(sql).execute(&mut *conn).await.unwrap();
}

/// Percent-encodes a query value (every byte but ASCII letters and digits).
pub fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The Redis server for tests; CI starts it.
pub fn redis_url() -> String {
    std::env::var("CHAJA_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// Where the MariaDB/MySQL server for tests is, as `mysql://user:pass@host:port`;
/// `.ci/run` starts it and creates a test user.
fn mysql_server() -> String {
    std::env::var("CHAJA_TEST_MYSQL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned())
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub client: crate::http_client::Client,
    pub state: AppState,
    pub args: ServeArgs,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<chaja::app::Result<()>>,
    fixture: Fixture,
}

/// What outlives a restart: the database and the directories.
struct Fixture {
    dir: tempfile::TempDir,
    mysql_database: Option<String>,
}

pub async fn spawn_app(store: Store) -> TestApp {
    spawn_app_with(store, |_| {}).await
}

/// Like `spawn_app`, with settings changed by `configure`.
pub async fn spawn_app_with(store: Store, configure: impl FnOnce(&mut ServeArgs)) -> TestApp {
    let database = Database::create(store).await;
    let mut args = serve_args(&database);
    configure(&mut args);
    start(args, database.into_fixture()).await
}

/// A server mirroring the tables of `schema` (created first, the way the
/// application that owns them would) as `config_toml` declares, after
/// `chaja install`.
pub async fn spawn_app_on_schema(store: Store, schema: &[&str], config_toml: &str) -> TestApp {
    spawn_app_on_schema_with(store, schema, config_toml, |_| {}).await
}

/// Like `spawn_app_on_schema`, with settings changed by `configure`.
pub async fn spawn_app_on_schema_with(
    store: Store,
    schema: &[&str],
    config_toml: &str,
    configure: impl FnOnce(&mut ServeArgs),
) -> TestApp {
    let database = Database::create(store).await;
    database.run(schema).await;
    let path = database.write_config(config_toml);
    let file = chaja_core::sources::ConfigFile::load(&path).expect("the test config loads");
    let db = Db::connect_lazy(&database.url, 1).unwrap();
    chaja_store::install::install(
        &db,
        file.sources.as_ref().expect("the config names sources"),
    )
    .await
    .expect("chaja install");
    db.pool.close().await;
    let mut args = serve_args(&database);
    args.store.config = Some(path);
    configure(&mut args);
    start(args, database.into_fixture()).await
}

/// A fresh, empty database (and a temporary directory beside it) that no
/// server uses yet; the binary tests drive it with `chaja install` and
/// friends.
pub struct Database {
    pub url: String,
    pub dir: tempfile::TempDir,
    mysql_database: Option<String>,
}

impl Database {
    pub async fn create(store: Store) -> Database {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().expect("temp dir");
        let (url, mysql_database) = match store {
            Store::Sqlite => (
                format!(
                    "sqlite://{}?mode=rwc",
                    dir.path().join("chaja.db").display()
                ),
                None,
            ),
            Store::MySql => {
                let name = format!("chaja_t_{:016x}", rand::random::<u64>());
                let admin = Db::connect_lazy(&format!("{}/test", mysql_server()), 1).unwrap();
                sqlx::query(&format!("CREATE DATABASE {name} CHARACTER SET utf8mb4"))
                    .execute(&admin.pool)
                    .await
                    .expect("MariaDB must be running for the tests (see .ci/run)");
                admin.pool.close().await;
                (format!("{}/{name}", mysql_server()), Some(name))
            }
        };
        Database {
            url,
            dir,
            mysql_database,
        }
    }

    /// Runs each statement, in order, on one connection.
    pub async fn run(&self, statements: &[&str]) {
        let db = Db::connect_lazy(&self.url, 1).unwrap();
        for statement in statements {
            sqlx::query(statement)
                .execute(&db.pool)
                .await
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        db.pool.close().await;
    }

    /// Writes `<dir>/chaja.toml` and returns its path.
    pub fn write_config(&self, toml: &str) -> PathBuf {
        let path = self.dir.path().join("chaja.toml");
        std::fs::write(&path, toml).unwrap();
        path
    }

    fn into_fixture(self) -> Fixture {
        Fixture {
            dir: self.dir,
            mysql_database: self.mysql_database,
        }
    }

    /// Drops the MySQL database (the directory goes with `self`).
    pub async fn finish(self) {
        self.into_fixture().finish().await;
    }
}

/// How tests rebuild: a small writer, every 4-gram's positions kept.
pub const REBUILD: chaja_mirror::reindex::RebuildOptions = chaja_mirror::reindex::RebuildOptions {
    writer_memory: 32 << 20,
    positions: chaja_index::PositionsShare::EVERY,
};

/// The settings of a test server on `database`: small pools, fast polling,
/// no Redis.
fn serve_args(database: &Database) -> ServeArgs {
    use std::time::Duration;
    ServeArgs {
        store: StoreArgs {
            database_url: database.url.clone(),
            index_dir: database.dir.path().join("index"),
            db_pool: Some(4),
            ko_dic: ko_dic(),
            analysis_cache: chaja_index::morph::DEFAULT_SENTENCE_CACHE_BYTES as usize,
            writer_memory: 32 << 20,
            fourgram_positions: Default::default(),
            config: None,
        },
        bind: "127.0.0.1:0".parse().unwrap(),
        drain: Duration::ZERO,
        cache: CacheArgs {
            redis_url: None,
            cache_prefix: format!("chaja-test-{:016x}", rand::random::<u64>()),
            max_stale: Duration::ZERO,
            grace: Duration::ZERO,
            redis_timeout: Duration::from_millis(50),
            trending_min_chars: 2,
            // One client makes a trend in tests, most of which search from
            // one address; `trending_needs_clients` sets the default's 3.
            trending_min_clients: 1,
            trending_exclude: Default::default(),
            l1: 16 << 20,
        },
        keys: KeyArgs {
            cursor_secret: None,
            api_key: None,
            write_key: None,
            admin_key: None,
            search_key: None,
            allowed_hosts: Default::default(),
        },
        limits: LimitArgs {
            rate_limit: 0,
            request_timeout: Duration::from_secs(10),
            max_in_flight: 1024,
            max_in_flight_per_client: 0,
            heavy_searches: None,
            search_turns: None,
            max_queued_searches: 128,
            trusted_proxies: Default::default(),
            client_ip_header: Default::default(),
            max_query_chars: 100,
            max_size: 100,
            max_depth: 10_000,
            max_body_bytes: 65_536,
        },
        demo: DemoArgs {
            max_title_chars: 200,
            max_content_chars: 20_000,
        },
        mirror: MirrorArgs {
            replica_id: None,
            database_read_url: None,
            max_replica_lag: Duration::from_secs(30),
            max_lag: Duration::from_secs(30),
            outbox_retention: Duration::from_secs(24 * 3600),
            outbox_keep: 100_000,
            housekeeping: Duration::from_secs(10),
            poll: Duration::from_millis(20),
            gap_grace: Duration::from_secs(60),
            indexer_batch: 2000,
            heal_duplicates: false,
            max_patches: 100_000,
        },
    }
}

async fn start(args: ServeArgs, fixture: Fixture) -> TestApp {
    let app = App::build(&args).await.expect("app builds");
    let state = app.state.clone();
    let listener = tokio::net::TcpListener::bind(args.bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run(listener, shutdown.clone()));
    // Tests start from a ready server: wait out the index warm-up, which
    // on a test's tiny index takes milliseconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while state.mirror.progress.is_warming() {
        assert!(
            std::time::Instant::now() < deadline,
            "the index never warmed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // ...and the indexer's first check of its position against the outbox
    // (milliseconds, with the database up; a test that starts without one
    // goes on after a while).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !state.mirror.progress.is_checked() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    TestApp {
        addr,
        client: crate::http_client::Client::new(),
        state,
        args,
        shutdown,
        server,
        fixture,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn db(&self) -> &Db {
        &self.state.db
    }

    pub fn index_dir(&self) -> PathBuf {
        self.args.store.index_dir.clone()
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn send(
        &self,
        method: crate::http_client::Method,
        path: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        let response = self
            .client
            .request(method, self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(crate::http_client::Method::POST, path, body)
            .await
    }

    /// Searches with extra query parameters; panics unless 200.
    pub async fn search(&self, q: &str, extra: &str) -> Value {
        let url = format!("/api/search?q={}{extra}", crate::helpers::urlencode(q));
        let (status, body) = self.get(&url).await;
        assert_eq!(status, StatusCode::OK, "search {q:?} failed: {body}");
        body
    }

    /// `(type, id)` of every hit, in order.
    pub async fn search_ids(&self, q: &str, extra: &str) -> Vec<(String, i64)> {
        let body = self.search(q, extra).await;
        body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["type"].as_str().unwrap().to_owned(),
                    h["id"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    pub async fn create_user(&self, name: &str) -> i64 {
        let (status, body) = self
            .post("/api/users", serde_json::json!({ "name": name }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_i64().unwrap()
    }

    pub async fn create_question(&self, author: i64, title: &str, content: &str) -> i64 {
        let (status, body) = self
            .post(
                "/api/questions",
                serde_json::json!({ "author_id": author, "title": title, "content": content }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_i64().unwrap()
    }

    pub async fn create_review(&self, question: i64, author: i64, content: &str) -> i64 {
        let (status, body) = self
            .post(
                &format!("/api/questions/{question}/reviews"),
                serde_json::json!({ "author_id": author, "content": content }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_i64().unwrap()
    }

    pub async fn sql(&self, sql: &str) {
        sqlx::query(sql).execute(&self.db().pool).await.unwrap();
    }

    /// Inserts questions of `author` with plain SQL, one `INSERT` each, all
    /// in one transaction, as a batch job would: `(title, content)` pairs.
    pub async fn insert_questions(
        &self,
        author: i64,
        rows: impl IntoIterator<Item = (String, &str)>,
    ) {
        let mut tx = self.db().pool.begin().await.unwrap();
        for (title, content) in rows {
            let sql = format!(
                "INSERT INTO questions (author_id, title, content) VALUES ({author}, '{title}', '{content}')"
            );
            sqlx::query(&sql).execute(&mut *tx).await.unwrap();
        }
        tx.commit().await.unwrap();
    }

    /// Waits until every outbox row written so far is searchable.
    pub async fn wait_indexed(&self) {
        self.wait_indexed_within(Duration::from_secs(20)).await
    }

    /// [`TestApp::wait_indexed`] for a setup of many rows: a debug build
    /// applies them slowly while the rest of the suite shares the cores,
    /// and how long that takes is not what the test checks.
    pub async fn wait_indexed_within(&self, within: Duration) {
        let target = outbox::max_seq(self.db()).await.unwrap();
        let progress = &self.state.mirror.progress;
        wait_until(
            within,
            &format!("the indexer did not reach outbox seq {target}"),
            || async { progress.applied_seq() >= target },
        )
        .await;
    }

    /// A rebuild beside the live index, as `chaja reindex` runs it (the
    /// server then catches it up and swaps it in).
    pub async fn reindex(&self) -> chaja_mirror::Result<chaja_mirror::reindex::Rebuilt> {
        let sources = self.state.search.index.sources();
        chaja_mirror::reindex::reindex(self.db(), sources, &self.index_dir(), REBUILD, false).await
    }

    /// Fails unless `verify` finds the tables and the index alike.
    pub async fn assert_clean(&self) {
        let index = &self.state.search.index;
        let report = chaja_mirror::verify::verify(self.db(), index.sources(), index.live())
            .await
            .unwrap();
        assert!(report.is_clean(), "{report:?}");
    }

    /// A request as a trusted proxy on loopback sends it for `client`
    /// (`X-Forwarded-For`): how tests tell clients apart.
    pub fn forwarded(&self, method: Method, path: &str, client: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .header("x-forwarded-for", client)
    }

    /// A MySQL transaction on a connection of its own, held open by the
    /// test until it sends `COMMIT` or `ROLLBACK` ([`exec`]); `sql`, if
    /// any, already ran in it.
    pub async fn open_transaction(&self, sql: Option<&str>) -> sqlx::MySqlConnection {
        use sqlx::Connection;
        let mut conn = sqlx::MySqlConnection::connect(&self.args.store.database_url)
            .await
            .unwrap();
        exec(&mut conn, "BEGIN").await;
        if let Some(sql) = sql {
            exec(&mut conn, sql).await;
        }
        conn
    }

    /// A second server on the same database with its own index directory,
    /// as a replica behind a balancer would be.
    pub async fn spawn_replica(&self) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut args = self.args.clone();
        args.store.index_dir = dir.path().join("index");
        start(
            args,
            Fixture {
                dir,
                mysql_database: None,
            },
        )
        .await
    }

    /// A second server on the same database with the index under `dir`.
    pub async fn spawn_replica_on(&self, dir: PathBuf) -> TestApp {
        let mut args = self.args.clone();
        args.store.index_dir = dir;
        start(
            args,
            Fixture {
                dir: tempfile::tempdir().expect("temp dir"),
                mysql_database: None,
            },
        )
        .await
    }

    /// Stops the server gracefully, keeping the database and index.
    pub async fn restart(self) -> TestApp {
        let (args, fixture) = self.stop().await;
        start(args, fixture).await
    }

    /// Stops the server, runs `offline` against the stores while nothing
    /// indexes, then starts it again.
    pub async fn restart_with<F, Fut>(self, offline: F) -> TestApp
    where
        F: FnOnce(Offline) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let (args, fixture) = self.stop().await;
        let db = Db::connect_lazy(&args.store.database_url, 1).unwrap();
        offline(Offline { db: db.clone() }).await;
        db.pool.close().await;
        start(args, fixture).await
    }

    async fn stop(self) -> (ServeArgs, Fixture) {
        self.shutdown.cancel();
        self.server.await.unwrap().unwrap();
        self.state.db.pool.close().await;
        (self.args, self.fixture)
    }

    /// Stops the server and drops the test database.
    pub async fn finish(self) {
        let (_, fixture) = self.stop().await;
        fixture.finish().await;
    }
}

impl Fixture {
    async fn finish(self) {
        if let Some(name) = self.mysql_database {
            let admin = Db::connect_lazy(&format!("{}/test", mysql_server()), 1).unwrap();
            sqlx::query(&format!("DROP DATABASE {name}"))
                .execute(&admin.pool)
                .await
                .unwrap();
        }
        drop(self.dir);
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until a server started on `base` (`http://127.0.0.1:port`)
/// answers `/healthz`; fails after 30 s.
pub async fn wait_until_serving(base: &str) {
    let client = crate::http_client::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server at {base} did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A copy of the built dictionary (its files linked, not copied) with a
/// user dictionary of `words` added, in `dir`.
pub fn dictionary_with_user_words(dir: &std::path::Path, words: &[&str]) -> PathBuf {
    let dictionary = dir.join("ko-dic-user");
    std::fs::create_dir(&dictionary).unwrap();
    for entry in std::fs::read_dir(ko_dic()).unwrap() {
        let entry = entry.unwrap();
        std::os::unix::fs::symlink(entry.path(), dictionary.join(entry.file_name())).unwrap();
    }
    let csv = dir.join("user.csv");
    let rows: String = words.iter().map(|w| format!("{w},NNG,{w}\n")).collect();
    std::fs::write(&csv, rows).unwrap();
    chaja_index::morph::build_user_dictionary(&csv, &dictionary).unwrap();
    dictionary
}

/// `chaja serve` as a separate process, killed when dropped so that a
/// failing test leaves nothing running.
pub struct Server(pub std::process::Child);

impl Server {
    /// Logs go to `CHAJA_TEST_SERVER_LOG` when it is set.
    pub fn start(envs: &[(&str, String)]) -> Server {
        let log = std::env::var("CHAJA_TEST_SERVER_LOG")
            .ok()
            .and_then(|path| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .ok()
            });
        Server::start_logged(envs, log)
    }

    pub fn start_logged(envs: &[(&str, String)], log: Option<std::fs::File>) -> Server {
        Server::start_in(None, envs, log)
    }

    /// In working directory `dir`, when given.
    pub fn start_in(
        dir: Option<&std::path::Path>,
        envs: &[(&str, String)],
        log: Option<std::fs::File>,
    ) -> Server {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chaja"));
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        command
            .arg("serve")
            .env("RUST_LOG", "info,tantivy=info")
            // Logs go to stdout.
            .stdout(log.map_or_else(std::process::Stdio::null, std::process::Stdio::from))
            .stderr(std::process::Stdio::null());
        for (key, value) in envs {
            command.env(key, value);
        }
        Server(command.spawn().expect("chaja binary starts"))
    }

    /// SIGKILL: no shutdown, no final commit.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The database of a stopped server.
pub struct Offline {
    pub db: Db,
}

impl Offline {
    pub async fn sql(&self, sql: &str) {
        sqlx::query(sql).execute(&self.db.pool).await.unwrap();
    }
}

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

/// A private redis-server on a free port, stopped on drop.
pub struct RedisServer {
    child: std::process::Child,
    pub port: u16,
}

impl RedisServer {
    pub fn start_on(port: u16) -> RedisServer {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (see .ci/run)");
        RedisServer { child, port }
    }

    pub fn start() -> RedisServer {
        RedisServer::start_on(free_port())
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// For SIGSTOP and SIGCONT.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_running(&self) -> bool {
        std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A private Redis Cluster: `masters` masters with `replicas` replicas
/// each, on loopback, node timeout 1 s (a failover takes a few seconds).
/// Stopped on drop.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    pub fn start(masters: usize, replicas: usize) -> RedisCluster {
        let dir = tempfile::tempdir().unwrap();
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|i| RedisCluster::start_node(dir.path(), i))
            .collect();
        let status = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(status.success(), "redis-cli --cluster create");
        let cluster = RedisCluster { nodes, _dir: dir };
        cluster.wait_ok();
        cluster
    }

    /// Node `i`, up and listening. A free port is only free until some
    /// other test takes it: a node that exits (its port, or its bus port
    /// at port + 10000, taken in between) is started again on another.
    fn start_node(dir: &std::path::Path, i: usize) -> RedisServer {
        for _ in 0..5 {
            let port = loop {
                let port = free_port();
                if port < 55_000
                    && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
                {
                    break port;
                }
            };
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"])
                // Replicas sync at once (the default waits 5 s), so that
                // one can take over from the start.
                .args(["--repl-diskless-sync-delay", "0"])
                .arg("--cluster-config-file")
                .arg(dir.join(format!("nodes-{i}.conf")))
                .arg("--dir")
                .arg(dir)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server must be installed (see .ci/run)");
            let mut node = RedisServer { child, port };
            let deadline = Instant::now() + Duration::from_secs(20);
            while !node.is_running() {
                if node.child.try_wait().ok().flatten().is_some() {
                    break; // it exited: try another port
                }
                assert!(
                    Instant::now() < deadline,
                    "redis-server on {port} never came up"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            if node.is_running() {
                return node;
            }
        }
        panic!("redis-server exited five times: ports taken by other tests?");
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// One node's `CLUSTER INFO` field.
    fn info(port: u16, field: &str) -> Option<String> {
        let output = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "info"])
            .output()
            .ok()?;
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{field}:"))
                    .map(|v| v.trim().to_owned())
            })
    }

    /// Waits until every running node says the cluster is ok and every
    /// replica is in sync with its master (only a synced replica takes
    /// over from a failed master).
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = self.nodes.iter().filter(|n| n.is_running()).all(|n| {
                RedisCluster::info(n.port, "cluster_state").as_deref() == Some("ok")
                    && replica_in_sync(n.port)
            });
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the redis cluster never became ok"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The node serving `key`'s slot as master.
    pub fn master_of(&self, key: &str) -> usize {
        let port = self.nodes.iter().find(|n| n.is_running()).unwrap().port;
        let output = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "keyslot", key])
            .output()
            .unwrap();
        let slot: u16 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        let output = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "nodes"])
            .output()
            .unwrap();
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if !fields.get(2).is_some_and(|f| f.contains("master")) || fields[2].contains("fail") {
                continue;
            }
            let serves = fields[8..].iter().any(|range| {
                let (first, last) = range.split_once('-').unwrap_or((range, range));
                matches!((first.parse::<u16>(), last.parse::<u16>()), (Ok(a), Ok(b)) if a <= slot && slot <= b)
            });
            if serves {
                let node_port: u16 = fields[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
                return self.nodes.iter().position(|n| n.port == node_port).unwrap();
            }
        }
        panic!("no master serves slot {slot}");
    }
}

/// A master, or a replica whose link to its master is up.
fn replica_in_sync(port: u16) -> bool {
    let Ok(output) = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "replication"])
        .output()
    else {
        return false;
    };
    let info = String::from_utf8_lossy(&output.stdout);
    info.contains("role:master") || info.contains("master_link_status:up")
}
