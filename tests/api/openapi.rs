//! The OpenAPI document describes what the server serves, and the server
//! answers every documented operation with a documented status.

use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, Store};
use crate::http_client::{Method, StatusCode};

/// Every route the router serves (besides the document itself).
const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/search"),
    ("get", "/api/search/trending"),
    ("get", "/api/search/zero-results"),
    ("get", "/api/suggest"),
    ("get", "/api/similar"),
    ("post", "/api/similar"),
    ("post", "/api/users"),
    ("post", "/api/questions"),
    ("get", "/api/questions/{id}"),
    ("put", "/api/questions/{id}"),
    ("delete", "/api/questions/{id}"),
    ("get", "/api/questions/{id}/reviews"),
    ("post", "/api/questions/{id}/reviews"),
    ("get", "/api/reviews/{id}"),
    ("put", "/api/reviews/{id}"),
    ("delete", "/api/reviews/{id}"),
    ("get", "/api/questions/{id}/comments"),
    ("post", "/api/questions/{id}/comments"),
    ("get", "/api/reviews/{id}/comments"),
    ("post", "/api/reviews/{id}/comments"),
    ("post", "/api/questions/{id}/like"),
    ("delete", "/api/questions/{id}/like"),
    ("get", "/api/questions/top-liked"),
    ("get", "/api/users/{id}/questions"),
    ("post", "/api/admin/reindex"),
    ("get", "/api/admin/verify"),
    ("get", "/api/admin/status"),
    ("get", "/api/search/options"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_documented_and_answers_as_documented() {
    let app = spawn_app(Store::Sqlite).await;
    let (status, doc) = app.get("/api-docs/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.clone(), path.clone()));
        }
    }
    for (method, path) in ROUTES {
        assert!(
            documented.contains(&(method.to_string(), path.to_string())),
            "{method} {path} is served but not documented"
        );
    }
    assert_eq!(documented.len(), ROUTES.len(), "documented: {documented:?}");
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());

    // Valid input for every operation; deletes last.
    let user = app.create_user("문서").await;
    let question = app.create_question(user, "문서 질문", "본문").await;
    let review = app.create_review(question, user, "문서 리뷰").await;
    app.wait_indexed().await;
    let body_for = |schema: &str| match schema {
        "NewUser" => json!({ "name": "새 사용자" }),
        "NewQuestion" => json!({ "author_id": user, "title": "제목", "content": "본문" }),
        "QuestionEdit" => json!({ "title": "고친 제목", "content": "고친 본문" }),
        "NewReview" | "NewComment" => json!({ "author_id": user, "content": "내용" }),
        "ReviewEdit" => json!({ "content": "고친 리뷰" }),
        "LikeBody" => json!({ "user_id": user }),
        "SimilarBody" => json!({ "text": "문서 질문의 본문" }),
        other => panic!("no example for request body {other}"),
    };
    // Deletes last, and the question (which takes its reviews) very last.
    documented.sort_by_key(|(method, path)| (method == "delete", path == "/api/questions/{id}"));
    for (method, path) in &documented {
        let operation = &paths[path.as_str()][method.as_str()];
        let id = if path.starts_with("/api/reviews/") {
            review
        } else if path.starts_with("/api/users/") {
            user
        } else {
            question
        };
        let mut url = path.replace("{id}", &id.to_string());
        if path == "/api/search" || path == "/api/suggest" {
            url.push_str("?q=%EB%AC%B8%EC%84%9C");
        }
        if path == "/api/similar" && method == "get" {
            url.push_str(&format!("?source=question&id={question}"));
        }
        let body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .map(|r| body_for(r.rsplit('/').next().unwrap()));
        let mut request = app.client.request(
            Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(),
            app.url(&url),
        );
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16().to_string();
        let allowed: Vec<&String> = operation["responses"].as_object().unwrap().keys().collect();
        let text = response.text().await.unwrap_or_default();
        assert!(
            allowed.iter().any(|s| **s == status) && status.starts_with('2'),
            "{method} {url} answered {status} ({text}); documented {allowed:?}"
        );
    }
    app.finish().await;
}

/// The document is as strict as the server: typed parameters are enums,
/// the configured limits replace the annotations' defaults, and every
/// operation declares the errors the layers around it answer with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_states_the_limits_and_errors_the_server_enforces() {
    let app = spawn_app_with(Store::Sqlite, |args| {
        args.limits.max_query_chars = 7;
        args.limits.max_size = 20;
        args.demo.max_title_chars = 30;
    })
    .await;
    let (_, doc) = app.get("/api-docs/openapi.json").await;
    let search = &doc["paths"]["/api/search"]["get"];
    let param = |name: &str| {
        search["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is documented"))
            .clone()
    };
    assert_eq!(param("q")["schema"]["maxLength"], 7);
    assert_eq!(param("q")["required"], true);
    assert_eq!(param("size")["schema"]["maximum"], 20);
    assert_eq!(
        param("type")["schema"]["enum"],
        json!(["question", "review", "all"])
    );
    assert_eq!(
        param("sort")["schema"]["enum"],
        json!([
            "recent",
            "oldest",
            "relevance",
            "attr.like_count.desc",
            "attr.like_count.asc",
            "attr.rating.desc",
            "attr.rating.asc"
        ])
    );
    assert_eq!(
        param("match")["schema"]["enum"],
        json!(["substring", "morph"])
    );
    let trending = &doc["paths"]["/api/search/trending"]["get"]["parameters"];
    assert_eq!(trending[0]["schema"]["enum"], json!(["10m", "1h", "24h"]));
    assert_eq!(
        doc["components"]["schemas"]["NewQuestion"]["properties"]["title"]["maxLength"],
        30
    );
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            for status in ["429", "503"] {
                assert!(responses.contains_key(status), "{method} {path}: {status}");
            }
            let keyed = !(method == "get"
                && (path == "/healthz"
                    || path == "/readyz"
                    || !path.starts_with("/api/")
                    || path.starts_with("/api/questions")
                    || path.starts_with("/api/reviews")
                    || path.starts_with("/api/users")))
                || path == "/metrics";
            assert_eq!(
                responses.contains_key("401") && responses.contains_key("403"),
                keyed,
                "{method} {path}"
            );
        }
    }
    // The server enforces what the document states.
    let (status, _) = app.get("/api/search?q=12345678").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = app.get("/api/search?q=1234567&size=21").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    app.finish().await;
}
