//! The mirror: every row change reaches the index through the outbox, across
//! restarts and rebuilds.

use reqwest::{Method, StatusCode};
use serde_json::json;

use chaja::db::outbox;
use chaja::mirror::reindex::reindex;
use chaja::seed::{seed, TextSource};

use crate::both_stores;
use crate::helpers::{spawn_app, Store};

both_stores!(
    rows_inserted_with_raw_sql_are_found,
    updates_and_deletes_are_reflected,
    restart_resumes_from_the_commit_payload,
    reindex_gives_the_same_answers,
);

async fn rows_inserted_with_raw_sql_are_found(store: Store) {
    let app = spawn_app(store).await;
    // Another program writes with plain SQL and the schema's defaults.
    app.sql("INSERT INTO users (name) VALUES ('외부')").await;
    app.sql("INSERT INTO questions (author_id, title, content) VALUES (1, '외부 프로그램', '직접 넣은 행')").await;
    app.sql(
        "INSERT INTO reviews (question_id, author_id, content) VALUES (1, 1, '직접 넣은 리뷰')",
    )
    .await;
    app.wait_indexed().await;
    let ids = app.search_ids("직접 넣은", "").await;
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&("question".into(), 1)) && ids.contains(&("review".into(), 1)));
    app.finish().await;
}

async fn updates_and_deletes_are_reflected(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let q = app.create_question(user, "처음 제목", "옛날 본문").await;
    let r = app.create_review(q, user, "리뷰 본문").await;
    app.wait_indexed().await;
    assert_eq!(app.search("옛날", "").await["total"], 1);

    let (status, _) = app
        .send(
            Method::PUT,
            &format!("/api/questions/{q}"),
            json!({ "title": "바뀐 제목", "content": "새 본문" }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.sql(&format!(
        "UPDATE reviews SET content = '외부에서 고침' WHERE id = {r}"
    ))
    .await;
    app.wait_indexed().await;
    assert_eq!(app.search("옛날", "").await["total"], 0);
    assert_eq!(app.search("바뀐 제목", "").await["total"], 1);
    assert_eq!(app.search("외부에서", "").await["total"], 1);
    assert_eq!(
        app.search("본문", "").await["total"],
        1,
        "one question, no stale copy"
    );

    app.sql(&format!("DELETE FROM reviews WHERE id = {r}"))
        .await;
    let (status, _) = app
        .send(Method::DELETE, &format!("/api/questions/{q}"), json!(null))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.wait_indexed().await;
    assert_eq!(app.search("본문", "").await["total"], 0);
    assert_eq!(app.search("외부에서", "").await["total"], 0);
    app.finish().await;
}

async fn restart_resumes_from_the_commit_payload(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    for i in 0..5 {
        app.create_question(user, &format!("재시작 전 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    let before = app.state.mirror.progress.applied_seq();
    assert_eq!(before, outbox::max_seq(app.db()).await.unwrap());

    let app = app.restart().await;
    // The new process starts from the position the index recorded.
    assert_eq!(app.state.index.live().applied_seq().unwrap(), before);
    app.sql("INSERT INTO questions (author_id, title, content) VALUES (1, '재시작 후', '본문')")
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("재시작", "").await["total"], 6);
    assert_eq!(
        app.search("본문", "").await["total"],
        6,
        "nothing indexed twice"
    );
    app.finish().await;
}

async fn reindex_gives_the_same_answers(store: Store) {
    let app = spawn_app(store).await;
    seed(app.db(), 60, 7, &TextSource::Builtin, false)
        .await
        .unwrap();
    app.wait_indexed().await;
    let queries = [
        "트랜잭션",
        "캐",
        "Spring Boot",
        "N+1 문제",
        "ERR",
        "v1.",
        "입니다",
    ];
    let mut before = Vec::new();
    for q in queries {
        before.push(app.search(q, "&size=50").await["hits"].clone());
    }
    let old_generation = app.state.index.live().id;

    let rebuilt = reindex(app.db(), &app.index_dir(), 32 << 20, false)
        .await
        .unwrap();
    assert!(rebuilt.generation > old_generation);
    // The running server switches to the new generation by itself.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.state.index.live().id != rebuilt.generation {
        assert!(
            std::time::Instant::now() < deadline,
            "server did not switch generations"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    app.wait_indexed().await;
    for (q, expected) in queries.iter().zip(before) {
        assert_eq!(
            app.search(q, "&size=50").await["hits"],
            expected,
            "query {q}"
        );
    }
    assert!(!app
        .index_dir()
        .join(format!("gen-{old_generation:06}"))
        .exists());
    app.finish().await;
}
