//! Search semantics over HTTP: LIKE's row set, newest first, exact totals.

use reqwest::StatusCode;
use serde_json::json;

use crate::both_stores;
use crate::helpers::{spawn_app, Store};

both_stores!(finds_rows_like_like_does, bad_search_input_gets_json_4xx);

async fn finds_rows_like_like_does(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("민지").await;
    let q1 = app
        .create_question(
            user,
            "스프링 부트 트랜잭션 질문",
            "JPA에서 N+1 문제가 납니다",
        )
        .await;
    let q2 = app
        .create_question(user, "스프링부트 캐시", "Redis 100% 적중? a_b 확인")
        .await;
    let r1 = app
        .create_review(
            q1,
            user,
            "트랜잭션 범위를 줄여 보세요. ＳＰＲＩＮＧ 문서 참고",
        )
        .await;
    app.wait_indexed().await;

    let q = |id| ("question".to_owned(), id);
    let r = |id| ("review".to_owned(), id);
    // Newest first; a review matches on its content.
    assert_eq!(app.search_ids("트랜잭션", "").await, [r(r1), q(q1)]);
    // Spaces are characters: "스프링 부트" and "스프링부트" differ, as in LIKE.
    assert_eq!(app.search_ids("\"스프링 부트\"", "").await, [q(q1)]);
    assert_eq!(app.search_ids("스프링부트", "").await, [q(q2)]);
    // Words are ANDed, each may match title or content.
    assert_eq!(app.search_ids("스프링 N+1", "").await, [q(q1)]);
    // 1-character keywords, case and width folding, literal % and _.
    assert_eq!(app.search_ids("캐", "").await, [q(q2)]);
    assert_eq!(app.search_ids("spring", "").await, [r(r1)]);
    assert_eq!(app.search_ids("100%", "").await, [q(q2)]);
    assert_eq!(app.search_ids("a_b", "").await, [q(q2)]);
    assert!(app.search_ids("a%b", "").await.is_empty());
    // Type filter and paging keep the exact total.
    assert_eq!(app.search_ids("트랜잭션", "&type=review").await, [r(r1)]);
    let page2 = app.search("스프링", "&size=1&page=2").await;
    assert_eq!(page2["total"], 2);
    assert_eq!(page2["hits"][0]["id"], q1);
    // A hit carries what a result list shows, with the match marked.
    let hit = &app.search("N+1", "").await["hits"][0];
    assert_eq!(hit["title"], "스프링 부트 트랜잭션 질문");
    assert_eq!(hit["snippet"], "JPA에서 <em>N+1</em> 문제가 납니다");
    assert!(hit["created_at"].as_str().unwrap().ends_with('Z'));
    app.finish().await;
}

async fn bad_search_input_gets_json_4xx(store: Store) {
    let app = spawn_app(store).await;
    let long = "가".repeat(101);
    for (path, code) in [
        ("/api/search".to_owned(), "empty_query"),
        ("/api/search?q=%20%20".to_owned(), "empty_query"),
        (format!("/api/search?q={long}"), "query_too_long"),
        ("/api/search?q=a&size=0".to_owned(), "invalid_size"),
        ("/api/search?q=a&size=101".to_owned(), "invalid_size"),
        ("/api/search?q=a&size=abc".to_owned(), "invalid_query"),
        ("/api/search?q=a&page=0".to_owned(), "invalid_page"),
        ("/api/search?q=a&page=-1".to_owned(), "invalid_query"),
        ("/api/search?q=a&page=101&size=100".to_owned(), "too_deep"),
        ("/api/search?q=a&type=user".to_owned(), "invalid_type"),
        ("/api/search?q=a%00b".to_owned(), "invalid_query"),
        ("/api/search?q=%FF".to_owned(), "invalid_query"),
    ] {
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], code, "{path}: {body}");
        assert!(body["error"]["message"].is_string(), "{path}: {body}");
    }
    let (status, body) = app.get("/api/search?q=없는말").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({ "total": 0, "hits": [], "took_ms": body["took_ms"], "cache": { "hit": false, "age_ms": 0 } })
    );
    app.finish().await;
}
