//! Search semantics over HTTP: LIKE's row set, newest first, exact totals.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::json;

use crate::both_stores;
use crate::helpers::{spawn_app, Store};
use crate::http_client::StatusCode;

both_stores!(
    finds_rows_like_like_does,
    bad_search_input_gets_json_4xx,
    cursor_walk_under_concurrent_writes_has_no_duplicates_or_gaps,
    filters_and_sorts_combine_with_text,
    synonyms_widen_a_keyword_to_the_union_of_its_forms,
    a_rebuild_that_keeps_fewer_positions_answers_the_same,
);

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
    // Totals by type, for 질문 / 리뷰 tabs: they sum to the total, and a
    // type filter keeps only its own.
    let both = app.search("트랜잭션", "").await;
    assert_eq!(
        both["totals"],
        json!({"question": 1, "review": 1}),
        "{both}"
    );
    let one_char = app.search("스", "").await;
    assert_eq!(one_char["totals"], json!({"question": 2, "review": 0}));
    let reviews = app.search("트랜잭션", "&type=review").await;
    assert_eq!(reviews["totals"], json!({"question": 0, "review": 1}));
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
    // The title is HTML too: escaped, with matches marked.
    let hit = &app.search("스프링", "").await["hits"][1];
    assert_eq!(hit["title"], "<em>스프링</em> 부트 트랜잭션 질문");
    let hostile = app
        .create_question(user, "<img src=x onerror=alert(1)>", "본문")
        .await;
    app.wait_indexed().await;
    let hit = &app.search("onerror", "").await["hits"][0];
    assert_eq!(hit["id"], hostile);
    assert_eq!(hit["title"], "&lt;img src=x <em>onerror</em>=alert(1)&gt;");
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
        ("/api/search?q=a&size=abc".to_owned(), "invalid_size"),
        ("/api/search?q=a&page=0".to_owned(), "invalid_page"),
        ("/api/search?q=a&page=-1".to_owned(), "invalid_page"),
        ("/api/search?q=a&page=101&size=100".to_owned(), "too_deep"),
        ("/api/search?q=a&type=user".to_owned(), "invalid_type"),
        ("/api/search?q=a%00b".to_owned(), "invalid_query"),
        ("/api/search?q=%FF".to_owned(), "invalid_query"),
        ("/api/search?q=a&sort=best".to_owned(), "invalid_sort"),
        ("/api/search?q=a&from=yesterday".to_owned(), "invalid_time"),
        (
            "/api/search?q=a&from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z".to_owned(),
            "invalid_time",
        ),
        ("/api/search?q=a&author_id=1".to_owned(), "invalid_query"),
        (
            "/api/search?q=a&attr.nobody=1".to_owned(),
            "invalid_attribute",
        ),
        ("/api/search?q=a&type=nothing".to_owned(), "invalid_type"),
        (
            format!("/api/search?q=a&attr.author_id={}", "7".repeat(201)),
            "invalid_attribute",
        ),
        (
            "/api/search?q=a&cursor=garbage".to_owned(),
            "invalid_cursor",
        ),
        ("/api/search?q=a&unknown=1".to_owned(), "invalid_query"),
    ] {
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], code, "{path}: {body}");
        assert!(body["error"]["message"].is_string(), "{path}: {body}");
    }
    let (status, body) = app.get("/api/search?q=없는말").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            body["total"].as_u64(),
            body["hits"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
    assert!(
        body["next_cursor"].is_null() && body["took_ms"].is_number(),
        "{body}"
    );
    assert_eq!(body["cache"]["hit"], false);
    app.finish().await;
}

async fn cursor_walk_under_concurrent_writes_has_no_duplicates_or_gaps(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let mut before = Vec::new();
    for i in 0..23 {
        before.push(
            app.create_question(user, &format!("커서 {i}"), "본문")
                .await,
        );
    }
    app.wait_indexed().await;
    let mut seen: Vec<i64> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut page = 0;
    loop {
        let extra = match &cursor {
            Some(c) => format!("&size=5&cursor={c}"),
            None => "&size=5".to_owned(),
        };
        let body = app.search("커서", &extra).await;
        seen.extend(
            body["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["id"].as_i64().unwrap()),
        );
        // Rows are added and removed while the walk goes on.
        app.create_question(user, &format!("커서 새 글 {page}"), "본문")
            .await;
        if page == 1 {
            let (status, _) = app
                .send(
                    crate::http_client::Method::DELETE,
                    &format!("/api/questions/{}", before[0]),
                    json!(null),
                )
                .await;
            assert_eq!(status, StatusCode::NO_CONTENT);
        }
        app.wait_indexed().await;
        page += 1;
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(page < 20, "walk does not end");
    }
    let mut unique = seen.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "duplicates in {seen:?}");
    // Every row that existed before the walk and still exists was seen, newest first.
    let expected: Vec<i64> = before
        .iter()
        .rev()
        .copied()
        .filter(|id| seen.contains(id) || *id != before[0])
        .collect();
    for id in &expected {
        assert!(seen.contains(id), "row {id} skipped; walk saw {seen:?}");
    }
    let positions: Vec<usize> = expected
        .iter()
        .map(|id| seen.iter().position(|s| s == id).unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "not newest first: {seen:?}"
    );
    // A cursor is bound to its query.
    let other = app.search("본문", "&size=1").await;
    let cursor = other["next_cursor"].as_str().unwrap();
    let (status, body) = app
        .get(&format!("/api/search?q=%EC%BB%A4%EC%84%9C&cursor={cursor}"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "invalid_cursor");
    app.finish().await;
}

async fn filters_and_sorts_combine_with_text(store: Store) {
    let app = spawn_app(store).await;
    let a = app.create_user("a").await;
    let b = app.create_user("b").await;
    let qa = app
        .create_question(a, "필터링 질문", "필터 본문 필터")
        .await;
    let qb = app.create_question(b, "다른 질문", "필터링").await;
    let rb = app.create_review(qa, b, "필터 리뷰").await;
    app.wait_indexed().await;
    // Spread created_at so the time filters have something to cut.
    app.sql(&format!(
        "UPDATE questions SET created_at = 1767225600000 WHERE id = {qa}"
    ))
    .await; // 2026-01-01
    app.sql(&format!(
        "UPDATE questions SET created_at = 1769904000000 WHERE id = {qb}"
    ))
    .await; // 2026-02-01
    app.sql(&format!(
        "UPDATE reviews SET created_at = 1772323200000 WHERE id = {rb}"
    ))
    .await; // 2026-03-01
    app.wait_indexed().await;
    let q = |id| ("question".to_owned(), id);
    let r = |id| ("review".to_owned(), id);

    assert_eq!(app.search_ids("필터", "").await, [r(rb), q(qb), q(qa)]);
    assert_eq!(
        app.search_ids("필터", "&sort=oldest").await,
        [q(qa), q(qb), r(rb)]
    );
    assert_eq!(
        app.search_ids("필터", &format!("&attr.author_id={b}"))
            .await,
        [r(rb), q(qb)]
    );
    assert_eq!(
        app.search_ids("필터", &format!("&attr.author_id={b}&type=question"))
            .await,
        [q(qb)]
    );
    assert_eq!(
        app.search_ids(
            "필터",
            "&from=2026-01-15T00:00:00Z&to=2026-02-15T00:00:00%2B09:00"
        )
        .await,
        [q(qb)]
    );
    let body = app.search("필터", "&from=2026-02-01T00:00:00Z").await;
    assert_eq!(body["total"], 2);
    // Relevance: a title match outranks a body match, though it is older.
    assert_eq!(
        app.search_ids("필터링", "&sort=relevance").await,
        [q(qa), q(qb)]
    );
    app.finish().await;
}

/// With no `CHAJA_CURSOR_SECRET`, the first server generates a secret and
/// stores it: a replica on the same database honours the first one's
/// cursors, and a cursor signed with the old public default is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_secrets_are_generated_once_and_shared() {
    let app = spawn_app(Store::Sqlite).await;
    let user = app.create_user("u").await;
    for i in 0..3 {
        app.create_question(user, &format!("커서 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    let replica = app.spawn_replica().await;
    replica.wait_indexed().await;
    let first = app.search("커서", "&size=1").await;
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    // The replica reads the cursor (its MAC checks out with the shared
    // secret), but holds no point in time of the primary's: a 410 that
    // restarts the walk, not a 400 for a forged cursor (below), and not a
    // page of another point in time.
    let (status, body) = replica
        .get(&format!(
            "/api/search?q=%EC%BB%A4%EC%84%9C&size=1&cursor={cursor}"
        ))
        .await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert_eq!(body["error"]["code"], "cursor_expired");
    let next = app
        .search("커서", &format!("&size=1&cursor={cursor}"))
        .await;
    assert_eq!(
        next["hits"][0]["id"],
        first["hits"][0]["id"].as_i64().unwrap() - 1
    );
    // The same cursor, signed with the key the old default secret gave.
    let public = blake3::derive_key("chaja search cursor v1", b"chaja-cursor-secret");
    let (body, _) = cursor.split_once('.').unwrap();
    let raw = URL_SAFE_NO_PAD.decode(body).unwrap();
    let mac = URL_SAFE_NO_PAD.encode(&blake3::keyed_hash(&public, &raw).as_bytes()[..16]);
    let (status, _) = app
        .get(&format!(
            "/api/search?q=%EC%BB%A4%EC%84%9C&size=1&cursor={body}.{mac}"
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    replica.finish().await;
    app.finish().await;
}

/// A search whose request timed out stops working: the index's counter of
/// matches visited moves by a fraction of what the same search visits when
/// it runs to the end. Before, the blocking scan ran on after the 503 and
/// visited every match. (With a 1 ms deadline the scan mostly stops at its
/// first look at the budget, before the loop: this shows that a dropped
/// request stops its work, not how soon inside the loop.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_that_timed_out_stops_reading_documents() {
    use chaja_core::text::parse_query;
    use chaja_index::search::{search, Request, Sort};
    use std::time::Duration;

    // Every request times out after a millisecond, so the setup is SQL.
    let app = crate::helpers::spawn_app_with(Store::Sqlite, |a| {
        a.limits.request_timeout = std::time::Duration::from_millis(1)
    })
    .await;
    app.sql("INSERT INTO users (name) VALUES ('u')").await;
    let rows = 20_000;
    for batch in 0..rows / 500 {
        let values: Vec<String> = (0..500)
            .map(|i| format!("(1, '작업 {}', '측정 대상 본문')", batch * 500 + i))
            .collect();
        app.sql(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES {}",
            values.join(",")
        ))
        .await;
    }
    // 10 s alone in a debug build; over 20 s once in CI beside the suite.
    app.wait_indexed_within(Duration::from_secs(120)).await;
    let generation = app.state.search.index.live();
    let scanned = || generation.scanned();

    // Oldest first cannot stop early: the whole search reads every match.
    let mut request = Request::newest_first(parse_query("측정 대상"), 10);
    request.sort = Sort::Oldest;
    let before = scanned();
    let whole = search(&generation, &request).unwrap();
    assert_eq!(whole.total, rows);
    let full = scanned() - before;
    assert!(full >= rows, "{full}");

    let before = scanned();
    let (status, body) = app.get("/api/search?q=측정%20대상&sort=oldest").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    // Time for a scan that went on regardless to finish.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after_timeout = scanned() - before;
    assert!(
        after_timeout < full / 2,
        "the timed-out search read {after_timeout} documents; a whole one reads {full}"
    );
    app.finish().await;
}

/// A 16 MiB row written by another program is searched with bounded memory:
/// the server's peak resident memory, reset after indexing, grows by far
/// less than the 256 MB one snippet of the whole text used to cost (its
/// offset map was 16 bytes per byte). Measured on the real binary through
/// /proc (`clear_refs` resets the peak).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sixteen_mib_row_is_searched_with_bounded_memory() {
    use crate::helpers::{free_port, Server};
    use std::time::{Duration, Instant};

    let app = spawn_app(Store::Sqlite).await;
    let user = app.create_user("u").await;
    let unit = "가나다라 마바사 ";
    let filler = unit.repeat((16 << 20) / unit.len() + 1);
    let content = format!("첫말 {filler} 끝말");
    assert!(content.len() >= 16 << 20);
    sqlx::query("INSERT INTO questions (author_id, title, content) VALUES (?, '큰 행', ?)")
        .bind(user)
        .bind(&content)
        .execute(&app.db().pool)
        .await
        .unwrap();
    drop(content);
    // The app stays up: its temporary directory holds the database.
    let url = app.args.store.database_url.clone();

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Server::start(&[
        ("DATABASE_URL", url),
        ("CHAJA_INDEX_DIR", dir.path().display().to_string()),
        ("CHAJA_BIND", format!("127.0.0.1:{port}")),
        ("CHAJA_KO_DIC", "off".to_owned()),
    ]);
    let pid = server.0.id();
    let client = crate::http_client::Client::new();
    let search = |q: &str, extra: &str| {
        client
            .get(format!("http://127.0.0.1:{port}/api/search?q={q}{extra}"))
            .send()
    };
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        if let Ok(r) = search("%ED%81%B0%20%ED%96%89", "").await {
            if r.json::<serde_json::Value>().await.unwrap()["total"] == 1 {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the big row was never indexed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let status_kb = |field: &str| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let before = status_kb("VmRSS:");
    // Matches at the start and past the highlighted prefix, each a new
    // computation (distinct `from`), so every one loads and highlights it.
    for (i, q) in ["%EC%B2%AB%EB%A7%90", "%EB%81%9D%EB%A7%90"]
        .iter()
        .enumerate()
    {
        for j in 0..3 {
            let from = format!("&from=2000-01-0{}T00:00:0{}Z", i + 1, j);
            let r = search(q, &from).await.unwrap();
            let body: serde_json::Value = r.json().await.unwrap();
            assert_eq!(body["total"], 1, "{body}");
            assert!(body["hits"][0]["snippet"].as_str().unwrap().len() < 2048);
        }
    }
    let grown_mb = status_kb("VmHWM:").saturating_sub(before) / 1024;
    eprintln!("peak memory grew by {grown_mb} MB");
    assert!(
        grown_mb < 128,
        "peak memory grew by {grown_mb} MB while searching a 16 MiB row"
    );
    drop(server);
    app.finish().await;
}

/// Heavy searches (a time filter, a page past the first) take turns in a
/// lane of their own: with its only turn taken, one waits until its
/// deadline, while a search box's first page answers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heavy_searches_wait_for_their_lane_and_others_do_not() {
    let app = crate::helpers::spawn_app_with(Store::Sqlite, |a| {
        a.limits.heavy_searches = Some(1);
        a.limits.request_timeout = std::time::Duration::from_millis(500);
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "차선 시험", "본문").await;
    app.create_question(user, "차선 둘", "본문").await;
    app.wait_indexed().await;
    let cursor = |sort: &str| {
        let sort = sort.to_owned();
        let app = &app;
        async move {
            let (_, first) = app
                .get(&format!("/api/search?q=차선&sort={sort}&size=1"))
                .await;
            first["next_cursor"].as_str().unwrap().to_owned()
        }
    };
    let (oldest, recent) = (cursor("oldest").await, cursor("recent").await);
    let turn = app.state.search.lane.hold().await;
    let (status, body) = app.get("/api/search?q=차선").await;
    assert_eq!(
        (status, &body["total"]),
        (StatusCode::OK, &json!(2)),
        "{body}"
    );
    // Newest-first cursor pages stop early: not heavy.
    let (status, body) = app
        .get(&format!(
            "/api/search?q=차선&sort=recent&size=1&cursor={recent}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A time filter on a keyword of up to 4 characters is counted from its
    // postings, not by visiting the window: not heavy either.
    let (status, body) = app
        .get("/api/search?q=차선&from=2000-01-01T00:00:00Z")
        .await;
    assert_eq!(
        (status, &body["total"]),
        (StatusCode::OK, &json!(2)),
        "{body}"
    );
    // A phrase of 5 characters visits its window's matches.
    let phrase_in_window = "q=%22차선%20시험%22&from=2000-01-01T00:00:00Z";
    let oldest_page = format!("q=차선&sort=oldest&size=1&cursor={oldest}");
    for heavy in [phrase_in_window, "q=차선&page=2", oldest_page.as_str()] {
        let (status, body) = app.get(&format!("/api/search?{heavy}")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{heavy}: {body}");
    }
    drop(turn);
    let (status, body) = app.get(&format!("/api/search?{phrase_in_window}")).await;
    assert_eq!(
        (status, &body["total"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );
    app.finish().await;
}

/// Searches the cache does not answer take turns of the engine, with a
/// bounded line: with every turn taken and no room to wait, a new search
/// is shed at once with a 503 `overloaded` and `Retry-After`, while an
/// answer the cache holds is served without a turn; once a turn is free
/// the same search answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_a_full_line_searches_are_shed_and_cached_answers_are_not() {
    let app = crate::helpers::spawn_app_with(Store::Sqlite, |a| {
        a.limits.search_turns = Some(1);
        a.limits.max_queued_searches = 0;
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "줄서기 시험", "본문").await;
    app.wait_indexed().await;
    let (status, body) = app.get("/api/search?q=줄서기").await;
    assert_eq!(
        (status, &body["total"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );
    let turn = app.state.search.engine.hold().await;
    let response = app
        .client
        .get(app.url("/api/search?q=시험"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "overloaded", "{body}");
    let (status, body) = app.get("/api/search?q=줄서기").await;
    assert_eq!(
        (status, &body["total"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );
    drop(turn);
    let (status, body) = app.get("/api/search?q=시험").await;
    assert_eq!(
        (status, &body["total"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );
    app.finish().await;
}

/// Synonyms from the config file: a keyword of a group matches a row that
/// contains any form, each row once, and the total is the brute-force
/// union; `synonyms=false` searches the keyword alone.
async fn synonyms_widen_a_keyword_to_the_union_of_its_forms(store: Store) {
    use chaja_core::text::{parse_query, row_matches, Keyword};

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("chaja.toml");
    let groups = [
        vec!["k8s", "쿠버네티스", "kubernetes"],
        vec!["스프링부트", "스프링 부트", "spring boot"],
    ];
    std::fs::write(
        &config,
        "[synonyms]\ngroups = [[\"k8s\", \"쿠버네티스\", \"kubernetes\"], [\"스프링부트\", \"스프링 부트\", \"spring boot\"]]\n",
    )
    .unwrap();
    let app =
        crate::helpers::spawn_app_with(store, |a| a.store.config = Some(config.clone())).await;
    let user = app.create_user("u").await;
    let rows = [
        ("k8s 배포", "본문"),
        ("클러스터", "쿠버네티스 클러스터를 운영합니다"),
        ("Kubernetes pods", "영문 글"),
        ("둘 다", "쿠버네티스와 k8s"),
        ("설정", "스프링 부트 설정"),
        ("Spring Boot 3", "버전"),
        ("질문", "스프링부트 질문입니다"),
        ("관계없는 글", "파이썬"),
    ];
    let mut ids = Vec::new();
    for (title, content) in rows {
        ids.push(app.create_question(user, title, content).await);
    }
    app.wait_indexed().await;
    // The oracle: every keyword matched by any form of its group.
    let brute = |q: &str| -> Vec<i64> {
        let keywords = parse_query(q);
        let mut found: Vec<i64> = rows
            .iter()
            .zip(&ids)
            .filter(|((title, content), _)| {
                keywords.iter().all(|k| {
                    let group = groups
                        .iter()
                        .map(|g| {
                            g.iter()
                                .map(|f| parse_query(&format!("\"{f}\""))[0].clone())
                                .collect::<Vec<Keyword>>()
                        })
                        .find(|g| g.contains(k))
                        .unwrap_or_else(|| vec![k.clone()]);
                    group
                        .iter()
                        .any(|form| row_matches(std::slice::from_ref(form), title, content))
                })
            })
            .map(|(_, id)| *id)
            .collect();
        found.sort_unstable();
        found
    };
    for q in [
        "k8s",
        "KUBERNETES",
        "\"spring boot\"",
        "스프링부트",
        "k8s 클러스터",
        "파이썬",
    ] {
        let body = app.search(q, "&size=100").await;
        let mut found: Vec<i64> = body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_i64().unwrap())
            .collect();
        found.sort_unstable();
        let expected = brute(q);
        assert_eq!(found, expected, "{q}: {body}");
        assert_eq!(body["total"], expected.len(), "{q}");
    }
    let body = app.search("k8s", "").await;
    assert_eq!(body["total"], 4);
    assert_eq!(body["expanded"], json!(["k8s", "쿠버네티스", "kubernetes"]));
    let plain = app.search("k8s", "&synonyms=false").await;
    assert_eq!(plain["total"], 2, "{plain}");
    assert!(plain.get("expanded").is_none(), "{plain}");
    assert!(app.search("파이썬", "").await.get("expanded").is_none());
    // Every form is highlighted.
    let hit = &app.search("kubernetes", "&size=100").await["hits"];
    assert!(hit.to_string().contains("<em>쿠버네티스</em>"), "{hit}");
    app.finish().await;
}

/// A rebuild that keeps positions only for the 4-grams in half the rows or
/// more (`--fourgram-positions-share 0.5`) writes the others without, and
/// answers as the index built row by row did: a long keyword with a rare
/// 4-gram is checked against its rows' text, which drops the row that
/// holds its 4-grams apart.
async fn a_rebuild_that_keeps_fewer_positions_answers_the_same(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    // Enough rows for a rebuild's sample to choose (500).
    for chunk in 0..6 {
        let rows: Vec<String> = (0..100)
            .map(|i| {
                let n = chunk * 100 + i;
                let title = match n % 2 {
                    0 => "스프링부트 설정",
                    _ => "공통 제목",
                };
                let body = match n % 100 {
                    7 => "드문 스프링부트 사례 본문",
                    // Every 4-gram of `스프링부트 사례`, apart.
                    8 => "스프링부트 사과 트 사례",
                    _ => "공통 본문입니다",
                };
                format!("({user}, '{title} {n}', '{body}')")
            })
            .collect();
        app.sql(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES {}",
            rows.join(", ")
        ))
        .await;
    }
    app.wait_indexed().await;
    let queries = [
        ("스프링부트", 306),
        ("\"스프링부트 사례\"", 6),
        ("\"트 사례\"", 12),
        ("사과", 6),
        ("\"부트 설정\"", 300),
        ("\"본문입니다\"", 588),
    ];
    for (q, total) in queries {
        assert_eq!(app.search(q, "").await["total"], total, "{q}, row by row");
    }
    let options = chaja_mirror::reindex::RebuildOptions {
        positions: chaja_index::PositionsShare::new(0.5).unwrap(),
        ..crate::helpers::REBUILD
    };
    let index = &app.state.search.index;
    let rebuilt =
        chaja_mirror::reindex::reindex(app.db(), index.sources(), &app.index_dir(), options, false)
            .await
            .unwrap();
    crate::helpers::wait_until(
        std::time::Duration::from_secs(30),
        "the rebuild never went live",
        || async { index.live().id == rebuilt.generation },
    )
    .await;
    assert!(rebuilt.stages.positional_fourgrams.is_some_and(|n| n > 0));
    // The rare 4-grams were left out of `grams4`: its list is there.
    let fourgrams = index.live().fields.fourgrams.clone();
    assert!(fourgrams.common().is_some_and(|n| n > 0));
    assert!(fourgrams.holds("스프링부") && !fourgrams.holds("트 사례"));
    for (q, total) in queries {
        assert_eq!(app.search(q, "").await["total"], total, "{q}, rebuilt");
    }
    let hits = app.search("\"스프링부트 사례\"", "&size=10").await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 6, "{hits}");
    app.finish().await;
}
