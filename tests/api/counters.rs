//! Writes that change nothing chaja reads cost nothing: a Spring-style
//! table keeps its view counter on the post's row, and `view_count + 1`
//! writes no outbox row, while a change of anything chaja reads writes
//! exactly one and reaches the index.

use chaja_store::outbox;

use crate::both_stores;
use crate::helpers::{spawn_app, spawn_app_on_schema, Store, TestApp};

both_stores!(
    counter_updates_write_nothing_and_read_columns_one_row_each,
    the_demos_triggers_are_upgraded_to_compare_columns,
);

fn board(store: Store) -> &'static [&'static str] {
    match store {
        Store::MySql => &["CREATE TABLE post (
            id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            member_id BIGINT NOT NULL,
            title VARCHAR(255) NOT NULL,
            body TEXT NOT NULL,
            view_count INT NOT NULL DEFAULT 0,
            is_deleted BIT(1) NOT NULL DEFAULT b'0',
            created_at DATETIME(6) NOT NULL,
            updated_at DATETIME(6) NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"],
        Store::Sqlite => &["CREATE TABLE post (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            member_id BIGINT NOT NULL,
            title VARCHAR(255) NOT NULL,
            body TEXT NOT NULL,
            view_count INT NOT NULL DEFAULT 0,
            is_deleted INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NULL
        )"],
    }
}

const BOARD: &str = r#"
[[source]]
name = "post"
table = "post"
id = "id"
created_at = "created_at"
fields = ["title", "body"]
filter = "is_deleted = 0"
attributes = ["member_id"]
"#;

async fn outbox_rows(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM search_outbox")
        .fetch_one(&app.db().pool)
        .await
        .unwrap()
}

/// Runs `sql` and returns how many outbox rows it wrote.
async fn written(app: &TestApp, sql: &str) -> i64 {
    let before = outbox_rows(app).await;
    app.sql(sql).await;
    outbox_rows(app).await - before
}

async fn counter_updates_write_nothing_and_read_columns_one_row_each(store: Store) {
    let app = spawn_app_on_schema(store, board(store), BOARD).await;
    for i in 1..=10 {
        app.sql(&format!(
            "INSERT INTO post (member_id, title, body, created_at) VALUES ({i}, '게시글 {i}', '본문 {i}', '2026-01-{i:02} 10:00:00')"
        ))
        .await;
    }
    app.wait_indexed().await;
    // 2,000 counter updates (10 rows, 200 times), and updated_at.
    let before = outbox_rows(&app).await;
    for _ in 0..200 {
        app.sql("UPDATE post SET view_count = view_count + 1").await;
    }
    assert_eq!(
        outbox_rows(&app).await - before,
        0,
        "counter updates wrote outbox rows"
    );
    let touch = match store {
        Store::MySql => "UPDATE post SET updated_at = NOW(6)",
        Store::Sqlite => "UPDATE post SET updated_at = datetime('now')",
    };
    assert_eq!(written(&app, touch).await, 0);
    assert_eq!(written(&app, "UPDATE post SET title = title").await, 0);
    // Each thing chaja reads: exactly one row, and the index follows.
    assert_eq!(
        written(&app, "UPDATE post SET title = '바뀐 제목' WHERE id = 1").await,
        1
    );
    assert_eq!(
        written(&app, "UPDATE post SET body = '바뀐 본문' WHERE id = 2").await,
        1
    );
    let hide = match store {
        Store::MySql => "UPDATE post SET is_deleted = b'1' WHERE id = 3",
        Store::Sqlite => "UPDATE post SET is_deleted = 1 WHERE id = 3",
    };
    assert_eq!(written(&app, hide).await, 1);
    assert_eq!(
        written(&app, "UPDATE post SET member_id = 77 WHERE id = 4").await,
        1
    );
    assert_eq!(
        written(
            &app,
            "UPDATE post SET created_at = '2020-01-01 00:00:00' WHERE id = 5"
        )
        .await,
        1
    );
    app.wait_indexed().await;
    assert_eq!(app.search("\"바뀐 제목\"", "").await["total"], 1);
    assert_eq!(app.search("\"바뀐 본문\"", "").await["total"], 1);
    assert_eq!(app.search("\"게시글 3\"", "").await["total"], 0);
    let by_member = app.search("게시글", "&attr.member_id=77").await;
    assert_eq!(by_member["total"], 1, "{by_member}");
    let oldest = app.search("게시글", "&sort=oldest&size=1").await;
    assert_eq!(oldest["hits"][0]["id"], 5, "{oldest}");
    app.assert_clean().await;
    app.finish().await;
}

/// The demo's first migrations created triggers that record every update;
/// its start (`install` after the migrations) upgrades them, so a change
/// of `updated_at` alone writes nothing. A change the trigger did record
/// but that changed nothing indexed (a repair of a row as it is) is left
/// alone by the indexer: the index version does not move.
async fn the_demos_triggers_are_upgraded_to_compare_columns(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let id = app.create_question(user, "그대로인 글", "본문").await;
    app.wait_indexed().await;
    assert_eq!(
        written(
            &app,
            &format!("UPDATE questions SET updated_at = updated_at + 1 WHERE id = {id}")
        )
        .await,
        0
    );
    assert_eq!(
        written(
            &app,
            &format!("UPDATE questions SET title = '새 제목' WHERE id = {id}")
        )
        .await,
        1
    );
    app.wait_indexed().await;
    let version = app.state.search.cache.version();
    let repaired = chaja_mirror::verify::repair(
        app.db(),
        &[chaja_mirror::verify::Drift {
            source: "question".to_owned(),
            id: id.to_string(),
            problem: chaja_mirror::verify::Problem::Stale,
            reason: None,
        }],
    )
    .await
    .unwrap();
    assert_eq!(repaired, 1);
    app.wait_indexed().await;
    assert_eq!(
        app.state.search.cache.version(),
        version,
        "an unchanged row was written again"
    );
    assert!(outbox::max_seq(app.db()).await.unwrap() > 0);
    app.finish().await;
}

/// `chaja loadtest --scenario counters` on a site's own table: the storm
/// runs, writes no outbox row, and its probes are applied.
#[cfg(feature = "loadtest")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counters_scenario_runs_on_any_table() {
    let app = spawn_app_on_schema(Store::Sqlite, board(Store::Sqlite), BOARD).await;
    for i in 1..=20 {
        app.sql(&format!(
            "INSERT INTO post (member_id, title, body, created_at) VALUES (1, '글 {i}', '본문', '2026-01-01 00:00:00')"
        ))
        .await;
    }
    app.wait_indexed().await;
    let config = chaja_loadtest::counters::CountersConfig {
        database_url: app.args.store.database_url.clone(),
        table: "post".to_owned(),
        column: "view_count".to_owned(),
        rate: 50,
    };
    let host = format!("http://{}", app.addr);
    let summary = chaja_loadtest::counters::run(&host, &config, std::time::Duration::from_secs(3))
        .await
        .unwrap();
    assert!(summary.to_string().starts_with("TPS"), "{summary}");
    assert!(summary.executed >= 100, "{summary}");
    assert_eq!(summary.errors, 0, "{summary}");
    assert_eq!(summary.outbox_rows, 0, "{summary}");
    assert!(summary.probes >= 2, "{summary}");
    let views: i64 = sqlx::query_scalar("SELECT SUM(view_count) FROM post")
        .fetch_one(&app.db().pool)
        .await
        .unwrap();
    assert_eq!(views as u64, summary.executed);
    app.finish().await;
}
