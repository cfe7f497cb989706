//! The search cache: what is served from it, how fresh, and without Redis.

use crate::both_stores;
use crate::helpers::{redis_url, spawn_app_with, Store};

both_stores!(
    answers_are_cached_until_the_index_moves,
    stale_answers_are_served_only_within_the_bound,
    redis_keeps_answers_across_a_restart,
    searches_answer_when_redis_is_unreachable,
);

async fn answers_are_cached_until_the_index_moves(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.redis_url = Some(redis_url());
        a.cache_max_stale_ms = 0;
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "캐시 질문", "본문").await;
    app.wait_indexed().await;
    let first = app.search("캐시", "").await;
    assert_eq!(first["cache"]["hit"], false);
    let second = app.search("캐시", "").await;
    assert_eq!(second["cache"]["hit"], true);
    assert_eq!(second["hits"], first["hits"]);
    // Other parameters are other answers.
    assert_eq!(
        app.search("캐시", "&type=review").await["cache"]["hit"],
        false
    );

    // A write moves the index past the cached watermark: recomputed at once.
    app.create_question(user, "두 번째 캐시", "본문").await;
    app.wait_indexed().await;
    let third = app.search("캐시", "").await;
    assert_eq!(third["cache"]["hit"], false);
    assert_eq!(third["total"], 2);
    assert_eq!(app.search("캐시", "").await["cache"]["hit"], true);
    app.finish().await;
}

async fn stale_answers_are_served_only_within_the_bound(store: Store) {
    let app = spawn_app_with(store, |a| a.cache_max_stale_ms = 60_000).await;
    let user = app.create_user("u").await;
    app.create_question(user, "신선도", "본문").await;
    app.wait_indexed().await;
    assert_eq!(app.search("신선도", "").await["total"], 1);
    app.create_question(user, "신선도 2", "본문").await;
    app.wait_indexed().await;
    // Within the stated bound the old answer may be served, and says so.
    let stale = app.search("신선도", "").await;
    assert_eq!(
        (stale["cache"]["hit"].as_bool(), stale["total"].as_u64()),
        (Some(true), Some(1))
    );
    assert!(stale["cache"]["age_ms"].as_i64().unwrap() < 60_000);
    app.finish().await;
}

async fn redis_keeps_answers_across_a_restart(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.redis_url = Some(redis_url());
        a.cache_max_stale_ms = 0;
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "공유 캐시", "본문").await;
    app.wait_indexed().await;
    let before = app.search("공유", "").await;
    assert_eq!(before["cache"]["hit"], false);
    // A new process has an empty L1; the answer comes from Redis because the
    // index is still at the same outbox position.
    let app = app.restart().await;
    let after = app.search("공유", "").await;
    assert_eq!(after["cache"]["hit"], true);
    assert_eq!(after["hits"], before["hits"]);
    app.finish().await;
}

async fn searches_answer_when_redis_is_unreachable(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.redis_url = Some("redis://127.0.0.1:1".to_owned());
        a.cache_max_stale_ms = 0;
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "레디스 없이", "본문").await;
    app.wait_indexed().await;
    let first = app.search("레디스", "").await;
    assert_eq!(
        (first["total"].as_u64(), first["cache"]["hit"].as_bool()),
        (Some(1), Some(false))
    );
    // L1 still works.
    assert_eq!(app.search("레디스", "").await["cache"]["hit"], true);
    app.finish().await;
}
