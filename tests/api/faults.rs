//! Faults the mirror must survive, against real databases.

use std::time::{Duration, Instant};

use serde_json::json;

use chaja_mirror::verify::verify;

use crate::both_stores;
use crate::helpers::{spawn_app, spawn_app_with, wait_until, PrivateMariaDb, Store};
use crate::http_client::StatusCode;

both_stores!(
    a_row_inserted_and_deleted_before_indexing_never_shows,
    a_thousand_updates_to_one_row_end_in_its_last_version,
    a_burst_of_ten_thousand_raw_inserts_is_indexed,
);

async fn a_row_inserted_and_deleted_before_indexing_never_shows(store: Store) {
    let app = spawn_app(store).await;
    app.create_user("u").await;
    let app = app
        .restart_with(|app| async move {
            app.sql("INSERT INTO questions (author_id, title, content) VALUES (1, '잠깐 있던 행', '본문')").await;
            app.sql("DELETE FROM questions WHERE title = '잠깐 있던 행'").await;
        })
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("잠깐", "").await["total"], 0);
    app.assert_clean().await;
    app.finish().await;
}

async fn a_thousand_updates_to_one_row_end_in_its_last_version(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let q = app.create_question(user, "갱신", "버전 0").await;
    for v in 1..=1000 {
        app.sql(&format!(
            "UPDATE questions SET content = '버전 {v}', updated_at = updated_at + 1 WHERE id = {q}"
        ))
        .await;
    }
    app.wait_indexed().await;
    let hits = app.search("갱신", "").await;
    assert_eq!(hits["total"], 1);
    assert_eq!(app.search("\"버전 1000\"", "").await["total"], 1);
    assert_eq!(app.search("\"버전 999\"", "").await["total"], 0);
    app.assert_clean().await;
    app.finish().await;
}

async fn a_burst_of_ten_thousand_raw_inserts_is_indexed(store: Store) {
    let app = spawn_app(store).await;
    app.create_user("u").await;
    // 10,000 single-row INSERTs, 100 to a transaction, as a batch job would.
    for batch in 0..100 {
        app.insert_questions(1, (0..100).map(|i| (format!("대량 {batch}-{i}"), "본문")))
            .await;
    }
    app.wait_indexed().await;
    assert_eq!(app.search("대량", "").await["total"], 10_000);
    let report = verify(
        app.db(),
        app.state.search.index.sources(),
        app.state.search.index.live(),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.docs_in_index, 10_000);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_down_searches_answer_writes_503_and_nothing_is_lost() {
    let mut mariadb = PrivateMariaDb::install();
    mariadb.start().await;
    let url = mariadb.url();
    let app = spawn_app_with(Store::MySql, |a| a.store.database_url = url).await;
    let user = app.create_user("u").await;
    app.create_question(user, "장애 전", "본문").await;
    app.wait_indexed().await;

    mariadb.stop();
    // Searches answer from the index.
    assert_eq!(app.search("장애", "").await["total"], 1);
    // Writes fail with a clear 503 and a JSON body.
    let (status, body) = app
        .post(
            "/api/questions",
            json!({ "author_id": user, "title": "장애 중", "content": "본문" }),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "database_unavailable");
    // Readiness comes from a check once a second (see `mirror::health`).
    wait_until(
        Duration::from_secs(10),
        "readyz never saw the database down",
        || async { app.get("/readyz").await.0 == StatusCode::SERVICE_UNAVAILABLE },
    )
    .await;

    mariadb.start().await;
    // The pool reconnects and the indexer catches up.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = app
            .post(
                "/api/questions",
                json!({ "author_id": user, "title": "장애 후", "content": "본문" }),
            )
            .await;
        if status == StatusCode::CREATED {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes did not come back: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    app.wait_indexed().await;
    assert_eq!(app.search("장애", "").await["total"], 2);
    app.assert_clean().await;
    app.finish().await;
}
