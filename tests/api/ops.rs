//! What operators rely on: keys, limits, metrics, request ids, shedding.

use serde_json::json;

use crate::helpers::{free_port, spawn_app, spawn_app_with, wait_until, Server, Store};
use crate::http_client::{Method, StatusCode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_need_the_api_key_and_reads_do_not() {
    let app = spawn_app_with(Store::Sqlite, |a| a.keys.api_key = Some("s3cret".into())).await;
    let post = |key: Option<&'static str>| {
        let mut request = app
            .client
            .post(app.url("/api/users"))
            .json(&json!({ "name": "u" }));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request.send()
    };
    let missing = post(None).await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    assert_eq!(
        missing.json::<serde_json::Value>().await.unwrap()["error"]["code"],
        "unauthorized"
    );
    let wrong = post(Some("guess")).await.unwrap();
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        wrong.json::<serde_json::Value>().await.unwrap()["error"]["code"],
        "forbidden"
    );
    assert_eq!(
        post(Some("s3cret")).await.unwrap().status(),
        StatusCode::CREATED
    );
    // Searches and reads stay public.
    assert_eq!(app.get("/api/search?q=a").await.0, StatusCode::OK);
    assert_eq!(app.get("/api/questions/top-liked").await.0, StatusCode::OK);
    app.finish().await;
}

/// Each key guards its own scope: the admin key `/api/admin/*`,
/// `/metrics` and searches, the search key searches; the write key opens
/// neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_and_search_keys_guard_their_own_scopes() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.keys.api_key = Some("writer".into());
        a.keys.admin_key = Some("operator".into());
        a.keys.search_key = Some("reader".into());
    })
    .await;
    let send =
        |method: crate::http_client::Method, path: &'static str, key: Option<&'static str>| {
            let mut request = app.client.request(method, app.url(path));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            async move { request.send().await.unwrap().status() }
        };
    let get = |path, key| send(crate::http_client::Method::GET, path, key);
    let post = |path, key| send(crate::http_client::Method::POST, path, key);
    // An anonymous rebuild is refused, and so is one with the write key.
    assert_eq!(
        post("/api/admin/reindex", None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post("/api/admin/reindex", Some("writer")).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        get("/api/admin/verify", Some("operator")).await,
        StatusCode::OK
    );
    assert_eq!(get("/metrics", None).await, StatusCode::UNAUTHORIZED);
    assert_eq!(get("/metrics", Some("reader")).await, StatusCode::FORBIDDEN);
    assert_eq!(get("/metrics", Some("operator")).await, StatusCode::OK);
    assert_eq!(get("/api/search?q=a", None).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get("/api/suggest?q=a", Some("writer")).await,
        StatusCode::FORBIDDEN
    );
    // The admin key opens searches too: a load test sends it so that its
    // searches stay out of trending.
    assert_eq!(
        get("/api/suggest?q=a", Some("operator")).await,
        StatusCode::OK
    );
    assert_eq!(get("/api/search?q=a", Some("reader")).await, StatusCode::OK);
    // Health stays public: balancers probe it.
    assert_eq!(get("/readyz", None).await, StatusCode::OK);
    app.finish().await;
}

/// Every distinct HTTP method used to become a metric series of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_methods_do_not_grow_the_metric_series() {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    for i in 0..200 {
        let method =
            crate::http_client::Method::from_bytes(format!("M{i:04}X").as_bytes()).unwrap();
        app.client
            .request(method, app.url("/api/search?q=a"))
            .send()
            .await
            .unwrap();
    }
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains("M0001X"), "a method became a label");
    assert!(metrics.contains("method=\"other\""), "{metrics}");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_rate_gets_429_with_retry_after() {
    // The client is 203.0.113.5, as a trusted proxy on loopback says:
    // loopback clients themselves are never limited.
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.limits.rate_limit = 2;
        a.limits.trusted_proxies = "127.0.0.1".parse().unwrap();
    })
    .await;
    for _ in 0..20 {
        let response = app
            .forwarded(Method::GET, "/api/search?q=a", "127.0.0.1")
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "loopback is never rate limited"
        );
    }
    let mut limited = None;
    for _ in 0..20 {
        let response = app
            .forwarded(Method::GET, "/api/search?q=a", "203.0.113.5")
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(response);
            break;
        }
        assert_eq!(response.status(), StatusCode::OK);
    }
    let response = limited.expect("20 requests at once exceed 2/s with a burst of 4");
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(
        response.json::<serde_json::Value>().await.unwrap()["error"]["code"],
        "rate_limited"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_get_413() {
    let app = spawn_app(Store::Sqlite).await;
    let user = app.create_user("u").await;
    let body = json!({ "author_id": user, "title": "t", "content": "가".repeat(30_000) });
    let (status, response) = app.post("/api/questions", body).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{response}");
    assert_eq!(response["error"]["code"], "payload_too_large");
    // Under the byte limit but over the character limit: a 400.
    let body = json!({ "author_id": user, "title": "t", "content": "a".repeat(20_001) });
    let (status, response) = app.post("/api/questions", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(response["error"]["code"], "field_too_long");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_beyond_the_in_flight_limit_is_shed_with_503() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.limits.max_in_flight = 1;
        a.store.db_pool = Some(1);
    })
    .await;
    // The one request allowed in flight: a write waiting for the database
    // connection the test holds.
    let held = app.state.db.pool.acquire().await.unwrap();
    let write = app
        .client
        .post(app.url("/api/users"))
        .json(&json!({ "name": "대기" }))
        .send();
    let write = tokio::spawn(write);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let requests = (0..20).map(|_| app.client.get(app.url("/api/search?q=가나다")).send());
    for response in futures::future::join_all(requests).await {
        let response = response.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "overloaded");
    }
    drop(held);
    assert_eq!(write.await.unwrap().unwrap().status(), StatusCode::CREATED);
    // With the slot free again, searches answer.
    let (status, _) = app.get("/api/search?q=가나다").await;
    assert_eq!(status, StatusCode::OK);
    app.finish().await;
}

fn metric(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_and_search_reports_its_timing() {
    let app = spawn_app(Store::Sqlite).await;
    let user = app.create_user("u").await;
    app.create_question(user, "지표", "본문").await;
    app.wait_indexed().await;
    let scrape = || async {
        app.client
            .get(app.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let before = scrape().await;
    let response = app
        .client
        .get(app.url("/api/search?q=%EC%A7%80%ED%91%9C"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("x-request-id"));
    let timing = response.headers()["server-timing"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        timing.contains("index;dur=") && timing.contains("db;dur=0"),
        "{timing}"
    );
    app.search("지표", "").await;
    let after = scrape().await;
    let route = "route=\"/api/search\"";
    assert!(
        metric(&after, "http_requests_total", route)
            >= metric(&before, "http_requests_total", route) + 2.0,
        "{after}"
    );
    assert!(
        metric(&after, "cache_requests_total", "result=\"hit\"") >= 1.0,
        "{after}"
    );
    assert!(
        after.contains("http_request_duration_seconds_bucket"),
        "{after}"
    );
    assert!(metric(&after, "index_documents", "") >= 1.0, "{after}");
    assert!(
        after.contains("outbox_backlog") && after.contains("db_pool_connections"),
        "{after}"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_requests_and_exits_0() {
    let app = spawn_app(Store::Sqlite).await;
    let user = app.create_user("u").await;
    app.create_question(user, "종료", "본문").await;
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(&[
        ("DATABASE_URL", app.args.store.database_url.clone()),
        ("CHAJA_INDEX_DIR", dir.path().display().to_string()),
        ("CHAJA_BIND", format!("127.0.0.1:{port}")),
    ]);
    let url = format!("http://127.0.0.1:{port}/api/search?q=%EC%A2%85%EB%A3%8C");
    let client = crate::http_client::Client::new();
    wait_until(
        std::time::Duration::from_secs(30),
        "server did not start",
        || async { client.get(&url).send().await.is_ok() },
    )
    .await;
    // Steady load, then SIGTERM in the middle of it. A request either gets
    // its 200 or (sent after the listener closed) no connection at all.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (client, url, stop) = (client.clone(), url.clone(), stop.clone());
            tokio::spawn(async move {
                let mut ok = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(response) = client.get(&url).send().await else {
                        break;
                    };
                    assert_eq!(
                        response.status(),
                        StatusCode::OK,
                        "a request failed during shutdown"
                    );
                    response.bytes().await.unwrap();
                    ok += 1;
                }
                ok
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let term = std::process::Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "server did not exit after SIGTERM"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(status.success(), "exit status {status}");
    let mut served = 0;
    for worker in workers {
        served += worker.await.unwrap();
    }
    assert!(served > 0);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_limits_are_configurable() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.limits.max_query_chars = 5;
        a.limits.max_size = 3;
        a.demo.max_title_chars = 4;
        a.limits.max_body_bytes = 2048;
    })
    .await;
    let user = app.create_user("u").await;
    let (status, body) = app
        .get("/api/search?q=%EA%B0%80%EA%B0%80%EA%B0%80%EA%B0%80%EA%B0%80%EA%B0%80")
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("query_too_long"))
    );
    assert_eq!(
        app.get("/api/search?q=a&size=4").await.1["error"]["code"],
        "invalid_size"
    );
    let (status, body) = app
        .post(
            "/api/questions",
            json!({ "author_id": user, "title": "다섯 글자", "content": "c" }),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("field_too_long"))
    );
    let (status, _) = app
        .post(
            "/api/questions",
            json!({ "author_id": user, "title": "네 글자", "content": "c".repeat(3000) }),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    app.finish().await;
}

crate::both_stores!(probes_never_take_a_write_connection);

/// Probes read the background health check: with every connection of the
/// write pool held (a burst of slow writes), `/readyz` still reports the
/// database up and `/metrics` answers, and a crowd of probes does not keep
/// a write from its connection. Before, each probe pinged through the
/// write pool: here it would have timed out and answered 503.
async fn probes_never_take_a_write_connection(store: Store) {
    let app = spawn_app_with(store, |a| a.store.db_pool = Some(1)).await;
    let user = app.create_user("탐침").await;
    let held = app.state.db.pool.acquire().await.unwrap();
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["database"], true, "{body}");
    assert_eq!(app.get("/metrics").await.0, StatusCode::OK);
    drop(held);

    let probes: Vec<_> = (0..200)
        .map(|i| {
            let client = app.client.clone();
            let url = app.url(if i % 2 == 0 { "/readyz" } else { "/metrics" });
            tokio::spawn(async move { client.get(url).send().await.map(|r| r.status()) })
        })
        .collect();
    for i in 0..5 {
        let (status, body) = app
            .post(
                "/api/questions",
                json!({ "author_id": user, "title": format!("탐침 {i}"), "content": "본문" }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    for probe in probes {
        assert_eq!(probe.await.unwrap().unwrap(), StatusCode::OK);
    }
    app.finish().await;
}

/// `CHAJA_MAX_IN_FLIGHT_PER_CLIENT`: a client with that many requests
/// running gets a 429 for the next, while other clients and loopback go on.
/// Clients are told apart through a trusted proxy on loopback; the requests
/// stay in flight because the test holds the only database connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_too_many_requests_in_flight_gets_429() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.limits.max_in_flight_per_client = 2;
        a.limits.trusted_proxies = "127.0.0.1".parse().unwrap();
        a.store.db_pool = Some(1);
    })
    .await;
    let held = app.state.db.pool.acquire().await.unwrap();
    // The proxy on loopback names each request's client.
    let write = |from: &'static str| {
        let request = app
            .forwarded(Method::POST, "/api/users", from)
            .json(&json!({ "name": "대기" }));
        tokio::spawn(async move { request.send().await.unwrap().status() })
    };
    let waiting: Vec<_> = (0..2).map(|_| write("203.0.113.5")).collect();
    let local: Vec<_> = (0..4).map(|_| write("127.0.0.1")).collect();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // The third from the same client is refused at once...
    let refused = app
        .forwarded(Method::POST, "/api/users", "203.0.113.5")
        .json(&json!({ "name": "세 번째" }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_in_flight");
    // ...another client's is not.
    let other = app
        .forwarded(Method::GET, "/healthz", "203.0.113.6")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    drop(held);
    for task in waiting.into_iter().chain(local) {
        assert_eq!(task.await.unwrap(), StatusCode::CREATED);
    }
    // Slots are given back: the client can send again.
    let again = app
        .forwarded(Method::POST, "/api/users", "203.0.113.5")
        .json(&json!({ "name": "다시" }))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::CREATED);
    app.finish().await;
}

/// Behind a reverse proxy on the same machine, admin is not open to the
/// whole internet: with the proxy trusted, the client is whoever the proxy
/// says, and a remote client is refused. Without trust, a forged header
/// from a remote client changes nothing (checked in `http::client`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxy_on_loopback_does_not_make_everyone_loopback() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.limits.trusted_proxies = "127.0.0.1".parse().unwrap();
    })
    .await;
    let via_proxy = app
        .forwarded(Method::GET, "/metrics", "198.51.100.20")
        .send()
        .await
        .unwrap();
    assert_eq!(via_proxy.status(), StatusCode::FORBIDDEN);
    // A trusted proxy that names no client is not a local client either.
    let (status, _) = app.get("/metrics").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let local = app
        .forwarded(Method::GET, "/metrics", "127.0.0.1")
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), StatusCode::OK);
    app.finish().await;
}

/// `.env` in the working directory is read, under the real environment;
/// one in a parent directory is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dotenv_is_read_from_the_working_directory_only() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("service");
    std::fs::create_dir(&dir).unwrap();
    let port = free_port();
    std::fs::write(parent.path().join(".env"), "CHAJA_SEARCH_KEY=from-parent\n").unwrap();
    std::fs::write(
        dir.join(".env"),
        format!(
            "CHAJA_BIND=127.0.0.1:{port}\nDATABASE_URL=sqlite:{db}?mode=rwc\nCHAJA_INDEX_DIR={index}\nCHAJA_KO_DIC=off\nCHAJA_WRITE_KEY=from-dotenv\nCHAJA_ADMIN_KEY=from-dotenv\n",
            db = dir.join("chaja.db").display(),
            index = dir.join("index").display(),
        ),
    )
    .unwrap();
    let _server = Server::start_in(
        Some(&dir),
        &[("CHAJA_ADMIN_KEY", "from-environment".to_owned())],
        None,
    );
    let base = format!("http://127.0.0.1:{port}");
    crate::helpers::wait_until_serving(&base).await;
    let client = crate::http_client::Client::new();
    let write = client
        .post(format!("{base}/api/users"))
        .json(&json!({ "name": "u" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        write.status(),
        StatusCode::UNAUTHORIZED,
        "the write key came from .env"
    );
    let search = client
        .get(format!("{base}/api/search?q=a"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        search.status(),
        StatusCode::OK,
        "the parent's .env was not read"
    );
    let metrics = |key: &'static str| {
        client
            .get(format!("{base}/metrics"))
            .bearer_auth(key)
            .send()
    };
    assert_eq!(
        metrics("from-environment").await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        metrics("from-dotenv").await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
}

crate::both_stores!(admin_status_shows_what_the_console_needs);

/// `/api/admin/status`: documents by type, the mirror's position, cache
/// tiers, this replica's heartbeat, and the last verification and rebuild
/// once they ran.
async fn admin_status_shows_what_the_console_needs(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let question = app.create_question(user, "상태 질문", "본문").await;
    app.create_review(question, user, "상태 리뷰 하나").await;
    app.create_review(question, user, "상태 리뷰 둘").await;
    app.wait_indexed().await;
    app.search("상태", "").await;
    app.search("상태", "").await;

    let (status, body) = app.get("/api/admin/status").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["index"]["documents"], 3);
    assert_eq!(
        body["index"]["by_type"],
        json!({ "question": 1, "review": 2 })
    );
    assert!(body["index"]["size_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        body["index"]["normalization"],
        chaja_core::text::NORMALIZATION
    );
    assert_eq!(body["mirror"]["ready"], true);
    assert_eq!(
        body["mirror"]["applied_seq"],
        app.state.mirror.progress.applied_seq()
    );
    let l1 = &body["cache"]["tiers"][0];
    assert_eq!(
        (&l1["tier"], &l1["hits"], &l1["misses"]),
        (&json!("l1"), &json!(1), &json!(1))
    );
    assert_eq!(body["cache"]["redis"]["configured"], false);
    assert_eq!(
        (&body["verify"], &body["rebuild"]),
        (&json!(null), &json!(null))
    );

    let (status, _) = app.get("/api/admin/verify").await;
    assert_eq!(status, StatusCode::OK);
    let (status, started) = app.post("/api/admin/reindex", json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let body = loop {
        let (_, body) = app.get("/api/admin/status").await;
        if body["rebuild"]["state"] == "done" {
            break body;
        }
        assert_ne!(body["rebuild"]["state"], "failed", "{body}");
        assert!(std::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let rebuild = &body["rebuild"];
    assert_eq!(
        (&rebuild["scanned"], &rebuild["total"]),
        (&json!(3), &json!(3))
    );
    assert_eq!(rebuild["generation"], body["index"]["generation"]);
    assert_eq!(body["verify"]["clean"], true);
    assert_eq!(body["verify"]["docs_in_index"], 3);
    let replicas = body["replicas"].as_array().unwrap();
    assert!(
        replicas.iter().any(|r| r["behind"] == 0),
        "this server's heartbeat: {replicas:?}"
    );
    app.finish().await;
}

/// A web page in the operator's browser cannot use chaja: with no admin
/// key, a request for `Host: evil.example` (DNS rebinding) gets no admin
/// data and starts no rebuild, and a cross-site write is refused whatever
/// key it carries. Before, the first two answered 200 and 202.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_other_sites_cannot_use_admin_or_writes() {
    let app = spawn_app_with(Store::Sqlite, |a| {
        a.keys.write_key = Some("writer".into());
        a.keys.allowed_hosts = "search.internal".parse().unwrap();
    })
    .await;
    let send = |method: Method, path: &str, extra: &[(&str, &str)]| {
        let mut request = app.client.request(method, app.url(path));
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let body: serde_json::Value = response.json().await.unwrap_or_default();
            (
                status,
                body["error"]["code"].as_str().unwrap_or("").to_owned(),
            )
        }
    };
    let evil = [("host", "evil.example"), ("origin", "http://evil.example")];
    for (method, path) in [
        (Method::GET, "/api/admin/status"),
        (Method::GET, "/metrics"),
        (Method::POST, "/api/admin/reindex"),
    ] {
        let (status, code) = send(method.clone(), path, &evil).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}");
        assert!(
            code == "host_not_allowed" || code == "cross_site",
            "{path}: {code}"
        );
    }
    // Rebinding with no Origin at all (a GET): the Host alone refuses it.
    let (status, code) = send(
        Method::GET,
        "/api/admin/status",
        &[("host", "evil.example")],
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "host_not_allowed")
    );
    // A cross-site POST to the loopback address itself.
    let cross = [("origin", "http://evil.example")];
    let (status, code) = send(Method::POST, "/api/admin/reindex", &cross).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "cross_site")
    );
    let fetch = [("sec-fetch-site", "cross-site")];
    let (status, _) = send(Method::POST, "/api/admin/reindex", &fetch).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A write with the right key, from another site's page.
    let with_key = app
        .client
        .post(app.url("/api/users"))
        .bearer_auth("writer")
        .header("origin", "https://evil.example")
        .json(&json!({ "name": "침입" }))
        .send()
        .await
        .unwrap();
    assert_eq!(with_key.status(), StatusCode::FORBIDDEN);
    // The same write from this site's own page, and from a program.
    let own_origin = format!("http://{}", app.addr);
    let own = app
        .client
        .post(app.url("/api/users"))
        .bearer_auth("writer")
        .header("origin", &own_origin)
        .header("sec-fetch-site", "same-origin")
        .json(&json!({ "name": "본인" }))
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), StatusCode::CREATED);
    let program = app
        .client
        .post(app.url("/api/users"))
        .bearer_auth("writer")
        .json(&json!({ "name": "프로그램" }))
        .send()
        .await
        .unwrap();
    assert_eq!(program.status(), StatusCode::CREATED);
    // Keyless admin under loopback names and the configured one.
    for host in ["localhost:1", "127.0.0.1", "search.internal:8080"] {
        let (status, _) = send(Method::GET, "/api/admin/status", &[("host", host)]).await;
        assert_eq!(status, StatusCode::OK, "{host}");
    }
    app.finish().await;
}
