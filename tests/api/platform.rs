//! The platform's writes and reads, and their error bodies.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::both_stores;
use crate::helpers::{spawn_app, Store};

both_stores!(questions_and_reviews_round_trip, bad_writes_get_json_4xx);

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
