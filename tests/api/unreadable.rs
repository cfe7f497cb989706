//! Rows another program wrote with bytes that are not UTF-8: the mirror
//! goes on for every other row. On SQLite any bytes can be stored as TEXT;
//! on MySQL and MariaDB a text column of a source (the only kinds `install`
//! accepts for fields, and utf8mb4 or integer keys) holds valid text, so
//! these run on SQLite.

use serde_json::Value;

use chaja_demo::seed::{seed, TextSource};

use crate::helpers::{spawn_app, spawn_app_on_schema, Store, TestApp};
use crate::http_client::StatusCode;

/// A counter's value in `/metrics`, 0 when absent.
async fn metric(app: &TestApp, name: &str) -> f64 {
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = response.text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The issue's steps: 50 seeded rows, one given invalid UTF-8 by plain SQL,
/// then a new question. The new question is searchable, the indexer is
/// not failing, and the bad row is indexed with U+FFFD in place of its
/// invalid byte, still found by its valid text. (Before, the new question
/// never became searchable and `/readyz` said failing.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_that_is_not_utf8_does_not_stop_the_mirror() {
    let app = spawn_app(Store::Sqlite).await;
    seed(app.db(), 50, 1, &TextSource::Builtin, false)
        .await
        .unwrap();
    app.wait_indexed().await;
    app.sql("UPDATE questions SET title = '깨진 본문', content = CAST(X'C328' AS TEXT) || ' 남은 글' WHERE id = 1")
        .await;
    let user = app.create_user("u").await;
    app.create_question(user, "독성 뒤의 새 질문", "본문").await;
    app.wait_indexed().await;
    assert_eq!(app.search("독성 뒤의", "").await["total"], 1);
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let broken = app.search("남은 글", "").await;
    assert_eq!(broken["total"], 1, "{broken}");
    let snippet = broken["hits"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains('\u{FFFD}'), "{snippet}");
    assert!(metric(&app, "rows_read_lossily_total").await >= 1.0);
    // A rebuild and a verification read it the same way.
    let rebuilt = app.reindex().await.unwrap();
    assert_eq!(rebuilt.skipped, 0);
    app.wait_indexed().await;
    app.assert_clean().await;
    app.finish().await;
}

/// A table of its own, not a fixture (`crate::fixtures`): its key is TEXT,
/// so that a key that is not valid UTF-8 can be stored.
const NOTES: &[&str] = &["CREATE TABLE note (
    code TEXT NOT NULL PRIMARY KEY,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
)"];

const NOTES_CONFIG: &str = r#"
[[source]]
name = "note"
table = "note"
id = "code"
created_at = "created_at"
fields = ["body"]
"#;

/// A row whose key is not valid UTF-8 cannot be named in the index: it is
/// quarantined (logged with its source and key, counted in `/metrics`,
/// listed in `/api/admin/status`, reported by `verify`, skipped and listed
/// by `reindex`), and every other row goes on. Fixed, its next change
/// indexes it. (Before, its outbox row failed every read of the outbox.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_whose_key_cannot_be_read_is_quarantined_and_the_rest_go_on() {
    let app = spawn_app_on_schema(Store::Sqlite, NOTES, NOTES_CONFIG).await;
    app.sql("INSERT INTO note VALUES ('a', '앞의 메모', 1000)")
        .await;
    app.sql("INSERT INTO note VALUES (CAST(X'C328' AS TEXT), '나쁜 키의 메모', 2000)")
        .await;
    app.sql("INSERT INTO note VALUES ('b', '뒤의 메모', 3000)")
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("메모", "").await["total"], 2);
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, status) = app.get("/api/admin/status").await;
    let quarantined = status["mirror"]["quarantined"].as_array().unwrap().clone();
    assert_eq!(quarantined.len(), 1, "{status}");
    assert_eq!(quarantined[0]["source"], "note");
    assert_eq!(quarantined[0]["key"], "\u{FFFD}(");
    assert!(metric(&app, "rows_quarantined_total").await >= 1.0);
    // verify reports it; reindex skips and lists it.
    let (_, report) = app.get("/api/admin/verify").await;
    assert_eq!(report["unreadable"], 1, "{report}");
    let problems: Vec<&Value> = report["drift"].as_array().unwrap().iter().collect();
    assert_eq!(problems.len(), 1, "{report}");
    assert_eq!(problems[0]["problem"], "unreadable");
    let rebuilt = app.reindex().await.unwrap();
    assert_eq!(rebuilt.skipped, 1);
    assert_eq!(rebuilt.unreadable[0].key, "\u{FFFD}(");
    // Fixed with plain SQL: its next change indexes it, and a verification
    // clears the list.
    app.sql("UPDATE note SET code = 'c' WHERE body = '나쁜 키의 메모'")
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("나쁜 키의", "").await["total"], 1);
    let (_, report) = app.get("/api/admin/verify").await;
    assert_eq!(report["unreadable"], 0, "{report}");
    let (_, status) = app.get("/api/admin/status").await;
    assert_eq!(status["mirror"]["quarantined"], Value::Array(Vec::new()));
    app.assert_clean().await;
    app.finish().await;
}
