//! `spawn_app()`: a real server on port 0 with a fresh database and index.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use chaja::app::App;
use chaja::config::{CacheArgs, DemoArgs, KeyArgs, LimitArgs, MirrorArgs, ServeArgs, StoreArgs};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use chaja_http::AppState;
use chaja_store::{outbox, Db};

use super::{exec, ko_dic, wait_until, Database, Fixture, Store};
use crate::http_client::{Method, RequestBuilder, StatusCode};

pub struct TestApp {
    pub addr: SocketAddr,
    pub client: crate::http_client::Client,
    pub state: AppState,
    pub args: ServeArgs,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<chaja::app::Result<()>>,
    fixture: Fixture,
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
            cursor_keep_alive: Duration::from_secs(120),
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

/// The database of a stopped server.
pub struct Offline {
    pub db: Db,
}

impl Offline {
    pub async fn sql(&self, sql: &str) {
        sqlx::query(sql).execute(&self.db.pool).await.unwrap();
    }
}
