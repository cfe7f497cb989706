//! What the tests share: the two stores, polling, small SQL and URL helpers
//! and the dictionary; by job, in the modules below, the in-process server
//! (`spawn_app`), the test databases, the `chaja` binary as a process, and
//! private MariaDB and Redis servers. Everything is re-exported here, so a
//! test imports `crate::helpers::{…}` whatever module it lives in.

mod app;
mod database;
mod mariadb;
mod redis;
mod server;

use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use self::app::*;
pub use self::database::*;
pub use self::mariadb::*;
pub use self::redis::*;
pub use self::server::*;

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

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
