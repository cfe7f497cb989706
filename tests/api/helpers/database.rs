//! A fresh database for one test: a SQLite file in a temporary directory,
//! or a database of its own on the shared MariaDB/MySQL server.

use std::path::PathBuf;

use chaja_store::Db;

use super::Store;

/// Where the MariaDB/MySQL server for tests is, as `mysql://user:pass@host:port`;
/// `.ci/run` starts it and creates a test user.
fn mysql_server() -> String {
    std::env::var("CHAJA_TEST_MYSQL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned())
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

    pub(super) fn into_fixture(self) -> Fixture {
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

/// What outlives a restart: the database and the directories.
pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
    pub(super) mysql_database: Option<String>,
}

impl Fixture {
    pub(super) async fn finish(self) {
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
