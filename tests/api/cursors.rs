//! Cursor walks read a point in time: no row that existed throughout a
//! walk is skipped or repeated, whatever changes between its pages
//! (issue 62).

use crate::both_stores;
use crate::helpers::{spawn_app, Store, TestApp};
use crate::http_client::StatusCode;

both_stores!(
    a_walk_by_likes_never_skips_a_row_liked_past_its_cursor,
    a_walk_by_likes_never_repeats_a_row_liked_less,
    a_relevance_walk_is_unmoved_by_text_edits_and_new_rows,
    a_cursor_of_another_process_is_a_410,
);

/// Three questions holding `keyword`, with likes `likes` in that order.
async fn three(app: &TestApp, keyword: &str, likes: [i64; 3]) -> Vec<i64> {
    let user = app.create_user("u").await;
    let mut ids = Vec::new();
    for (name, likes) in ["가", "나", "다"].into_iter().zip(likes) {
        let id = app
            .create_question(user, &format!("{keyword} {name}"), "본문")
            .await;
        app.sql(&format!(
            "UPDATE questions SET like_count = {likes} WHERE id = {id}"
        ))
        .await;
        ids.push(id);
    }
    app.wait_indexed().await;
    ids
}

/// Walks `q` with `extra`, a page of one hit at a time, calling `between`
/// with the page number after each page (while the walk goes on), and
/// returns the ids seen in order.
async fn walk<F, Fut>(app: &TestApp, q: &str, extra: &str, mut between: F) -> Vec<i64>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        let extra = match &cursor {
            Some(c) => format!("{extra}&size=1&cursor={c}"),
            None => format!("{extra}&size=1"),
        };
        let body = app.search(q, &extra).await;
        for hit in body["hits"].as_array().unwrap() {
            seen.push(hit["id"].as_i64().unwrap());
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        between(page).await;
        assert!(page < 50, "the walk does not end: {seen:?}");
    }
    seen
}

/// The walk: A, B, C at 10, 5 and 1 likes; after the first page C
/// is liked up to 20. Read on the index as it is now, the walk went on
/// with B and ended: C was never shown.
async fn a_walk_by_likes_never_skips_a_row_liked_past_its_cursor(store: Store) {
    let app = spawn_app(store).await;
    let [a, b, c] = three(&app, "추천순", [10, 5, 1]).await[..] else {
        unreachable!()
    };
    let seen = walk(&app, "추천순", "&sort=attr.like_count.desc", |page| {
        let app = &app;
        async move {
            if page == 0 {
                app.sql(&format!(
                    "UPDATE questions SET like_count = 20 WHERE id = {c}"
                ))
                .await;
                app.wait_indexed().await;
            }
        }
    })
    .await;
    assert_eq!(seen, [a, b, c]);
    // A new walk sees the likes as they are now.
    let now = walk(&app, "추천순", "&sort=attr.like_count.desc", |_| async {
    })
    .await;
    assert_eq!(now, [c, a, b]);
    app.finish().await;
}

/// Lowering a value instead: A is liked down below C after the first
/// page. Read on the index as it is now, A came back at the end.
async fn a_walk_by_likes_never_repeats_a_row_liked_less(store: Store) {
    let app = spawn_app(store).await;
    let [a, b, c] = three(&app, "추천순", [10, 5, 1]).await[..] else {
        unreachable!()
    };
    let seen = walk(&app, "추천순", "&sort=attr.like_count.desc", |page| {
        let app = &app;
        async move {
            if page == 0 {
                app.sql(&format!(
                    "UPDATE questions SET like_count = 0 WHERE id = {a}"
                ))
                .await;
                app.wait_indexed().await;
            }
        }
    })
    .await;
    assert_eq!(seen, [a, b, c]);
    app.finish().await;
}

/// Relevance moves with every write (a row's own text, and every idf): a
/// walk still shows each row that existed throughout it exactly once,
/// while rows are edited and added between its pages.
async fn a_relevance_walk_is_unmoved_by_text_edits_and_new_rows(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let mut before = Vec::new();
    for i in 0..8 {
        let body = "관련도 ".repeat(i + 1);
        before.push(app.create_question(user, &format!("글 {i}"), &body).await);
    }
    app.wait_indexed().await;
    let seen = walk(&app, "관련도", "&sort=relevance", |page| {
        let app = &app;
        let edited = before[before.len() - 1 - page % before.len()];
        async move {
            // The best-ranked rows fall behind, and new rows come.
            app.sql(&format!(
                "UPDATE questions SET content = '관련도 한 번' WHERE id = {edited}"
            ))
            .await;
            app.create_question(user, &format!("새 글 {page}"), &"관련도 ".repeat(20))
                .await;
            app.wait_indexed().await;
        }
    })
    .await;
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "a row repeated: {seen:?}");
    let mut want = before.clone();
    want.sort_unstable();
    assert_eq!(
        sorted, want,
        "rows of the first page's point in time: {seen:?}"
    );
    app.finish().await;
}

/// A cursor names a point in time of the process that served its page: a
/// restarted server (or another replica) holds none, and says so with a
/// 410 rather than a page of another point in time.
async fn a_cursor_of_another_process_is_a_410(store: Store) {
    let app = spawn_app(store).await;
    three(&app, "재시작", [3, 2, 1]).await;
    let first = app.search("재시작", "&size=1").await;
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let app = app.restart().await;
    let (status, body) = app
        .get(&format!(
            "/api/search?q=%EC%9E%AC%EC%8B%9C%EC%9E%91&size=1&cursor={cursor}"
        ))
        .await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert_eq!(body["error"]["code"], "cursor_expired");
    // The walk starts again.
    let again = app.search("재시작", "&size=1").await;
    assert_eq!(again["hits"].as_array().unwrap().len(), 1);
    app.finish().await;
}
