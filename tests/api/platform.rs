//! The platform's writes and reads, and their error bodies.

use serde_json::json;

use crate::both_stores;
use crate::helpers::{spawn_app, Store};
use crate::http_client::{Method, StatusCode};

both_stores!(
    questions_and_reviews_round_trip,
    bad_writes_get_json_4xx,
    the_load_test_flow_works_end_to_end,
    likes_are_idempotent_and_rank_top_liked,
    lists_page_by_keyset,
);

async fn questions_and_reviews_round_trip(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("지훈").await;
    let q = app.create_question(user, "제목", "본문").await;
    let (status, body) = app.get(&format!("/api/questions/{q}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (body["title"].as_str(), body["author_id"].as_i64()),
        (Some("제목"), Some(user))
    );
    let r = app.create_review(q, user, "리뷰").await;
    let (status, body) = app.get(&format!("/api/reviews/{r}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["question_id"], q);
    assert_eq!(body["rating"], serde_json::Value::Null);
    // A rating of 1 to 5 is kept; another is a 400.
    let (status, rated) = app
        .post(
            &format!("/api/questions/{q}/reviews"),
            json!({ "author_id": user, "content": "별점 리뷰", "rating": 4 }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rated}");
    let rated = rated["id"].as_i64().unwrap();
    assert_eq!(
        app.get(&format!("/api/reviews/{rated}")).await.1["rating"],
        4
    );
    let (status, body) = app
        .post(
            &format!("/api/questions/{q}/reviews"),
            json!({ "author_id": user, "content": "별점 리뷰", "rating": 6 }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "invalid_rating");
    let (status, _) = app
        .send(
            Method::PUT,
            &format!("/api/reviews/{r}"),
            json!({ "content": "고친 리뷰" }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        app.get(&format!("/api/reviews/{r}")).await.1["content"],
        "고친 리뷰"
    );
    // Deleting a question takes its reviews with it.
    let (status, _) = app
        .send(Method::DELETE, &format!("/api/questions/{q}"), json!(null))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        app.get(&format!("/api/reviews/{r}")).await.0,
        StatusCode::NOT_FOUND
    );
    app.finish().await;
}

async fn bad_writes_get_json_4xx(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("서연").await;
    let cases = [
        (
            Method::POST,
            "/api/questions",
            json!({ "author_id": 999, "title": "t", "content": "c" }),
            422,
            "unprocessable",
        ),
        (
            Method::POST,
            "/api/questions",
            json!({ "author_id": user, "title": "", "content": "c" }),
            400,
            "invalid_field",
        ),
        (
            Method::POST,
            "/api/questions",
            json!({ "author_id": user, "title": "가".repeat(201), "content": "c" }),
            400,
            "field_too_long",
        ),
        (
            Method::POST,
            "/api/questions",
            json!({ "author_id": user, "title": "t", "content": "c", "x": 1 }),
            400,
            "invalid_json",
        ),
        (
            Method::POST,
            "/api/questions",
            json!({ "title": "t" }),
            400,
            "invalid_json",
        ),
        (
            Method::GET,
            "/api/questions/12345",
            json!(null),
            404,
            "not_found",
        ),
        (
            Method::GET,
            "/api/questions/abc",
            json!(null),
            400,
            "invalid_path",
        ),
        (
            Method::PUT,
            "/api/questions/12345",
            json!({ "title": "t", "content": "c" }),
            404,
            "not_found",
        ),
        (
            Method::DELETE,
            "/api/reviews/12345",
            json!(null),
            404,
            "not_found",
        ),
        (
            Method::POST,
            "/api/questions/12345/reviews",
            json!({ "author_id": user, "content": "c" }),
            404,
            "not_found",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let (got, response) = app.send(method.clone(), path, body).await;
        assert_eq!(got.as_u16(), status, "{method} {path}: {response}");
        assert_eq!(
            response["error"]["code"], code,
            "{method} {path}: {response}"
        );
    }
    // Malformed JSON.
    let response = app
        .client
        .post(app.url("/api/users"))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_json");
    app.finish().await;
}

/// The seven steps of a load-test user session.
async fn the_load_test_flow_works_end_to_end(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("부하").await;
    // 1-2. Create a question and read it.
    let q = app
        .create_question(user, "부하 테스트 질문", "nGrinder로 측정했습니다")
        .await;
    assert_eq!(
        app.get(&format!("/api/questions/{q}")).await.1["title"],
        "부하 테스트 질문"
    );
    // 3-4. Create a review and read it.
    let r = app.create_review(q, user, "k6 결과도 궁금합니다").await;
    assert_eq!(
        app.get(&format!("/api/reviews/{r}")).await.1["content"],
        "k6 결과도 궁금합니다"
    );
    // 5. Search finds both.
    app.wait_indexed().await;
    assert_eq!(app.search("ngrinder", "").await["total"], 1);
    assert_eq!(app.search("k6", "").await["hits"][0]["id"], r);
    // 6. Top liked.
    let (status, _) = app
        .post(
            &format!("/api/questions/{q}/like"),
            json!({ "user_id": user }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, top) = app.get("/api/questions/top-liked?limit=10").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(top[0]["id"], q);
    // 7. Comment, then list it.
    let (status, body) = app
        .post(
            &format!("/api/questions/{q}/comments"),
            json!({ "author_id": user, "content": "좋은 글" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = app
        .post(
            &format!("/api/reviews/{r}/comments"),
            json!({ "author_id": user, "content": "동의합니다" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, comments) = app.get(&format!("/api/questions/{q}/comments")).await;
    assert_eq!(comments["items"][0]["content"], "좋은 글");
    assert_eq!(
        app.get(&format!("/api/reviews/{r}/comments")).await.1["items"][0]["content"],
        "동의합니다"
    );
    // Comments are not searchable.
    app.wait_indexed().await;
    assert_eq!(app.search("좋은 글", "").await["total"], 0);
    app.finish().await;
}

async fn likes_are_idempotent_and_rank_top_liked(store: Store) {
    let app = spawn_app(store).await;
    let users: Vec<i64> = [
        app.create_user("a").await,
        app.create_user("b").await,
        app.create_user("c").await,
    ]
    .to_vec();
    let q1 = app.create_question(users[0], "하나", "본문").await;
    let q2 = app.create_question(users[0], "둘", "본문").await;
    let like = |q: i64, u: i64| {
        let path = format!("/api/questions/{q}/like");
        let app = &app;
        async move { app.post(&path, json!({ "user_id": u })).await }
    };
    for u in &users {
        assert_eq!(like(q2, *u).await.0, StatusCode::NO_CONTENT);
    }
    // The same user liking again changes nothing.
    assert_eq!(like(q1, users[0]).await.0, StatusCode::NO_CONTENT);
    assert_eq!(like(q1, users[0]).await.0, StatusCode::NO_CONTENT);
    let (_, top) = app.get("/api/questions/top-liked").await;
    let counts: Vec<(i64, i64)> = top
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_i64().unwrap(), t["like_count"].as_i64().unwrap()))
        .collect();
    assert_eq!(counts, [(q2, 3), (q1, 1)]);
    // Unlike twice is one unlike.
    for _ in 0..2 {
        let (status, _) = app
            .send(
                Method::DELETE,
                &format!("/api/questions/{q2}/like"),
                json!({ "user_id": users[1] }),
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    assert_eq!(
        app.get("/api/questions/top-liked").await.1[0]["like_count"],
        2
    );
    assert_eq!(like(999, users[0]).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        app.get("/api/questions/top-liked?limit=0").await.0,
        StatusCode::BAD_REQUEST
    );
    // A like changes the question's `like_count`, an attribute the search
    // sorts by (추천순): one outbox row, and the hit follows.
    let before = chaja_store::outbox::max_seq(app.db()).await.unwrap();
    like(q1, users[2]).await;
    assert_eq!(
        chaja_store::outbox::max_seq(app.db()).await.unwrap(),
        before + 1
    );
    app.wait_indexed().await;
    let body = app.search("본문", "&sort=attr.like_count.desc").await;
    let liked: Vec<(i64, i64)> = body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_i64().unwrap(),
                h["attributes"]["like_count"].as_i64().unwrap(),
            )
        })
        .collect();
    // Two likes each: ties newest first.
    assert_eq!(liked, [(q2, 2), (q1, 2)], "{body}");
    app.finish().await;
}

async fn lists_page_by_keyset(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let q = app.create_question(user, "목록", "본문").await;
    let mut reviews = Vec::new();
    for i in 0..5 {
        reviews.push(app.create_review(q, user, &format!("리뷰 {i}")).await);
    }
    let (_, first) = app
        .get(&format!("/api/questions/{q}/reviews?limit=3"))
        .await;
    let ids = |page: &serde_json::Value| -> Vec<i64> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(&first), reviews[..3]);
    let next = first["next"].as_i64().unwrap();
    let (_, second) = app
        .get(&format!("/api/questions/{q}/reviews?limit=3&after={next}"))
        .await;
    assert_eq!(ids(&second), reviews[3..]);
    assert!(second["next"].is_null());

    let q2 = app.create_question(user, "목록 2", "본문").await;
    let (_, mine) = app
        .get(&format!("/api/users/{user}/questions?limit=1"))
        .await;
    assert_eq!(ids(&mine), [q2]);
    let before = mine["next"].as_i64().unwrap();
    let (_, older) = app
        .get(&format!(
            "/api/users/{user}/questions?limit=1&before={before}"
        ))
        .await;
    assert_eq!(ids(&older), [q]);
    assert_eq!(
        app.get("/api/users/999/questions").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get(&format!("/api/questions/{q}/reviews?limit=101"))
            .await
            .0,
        StatusCode::BAD_REQUEST
    );
    app.finish().await;
}
