//! Writes that change nothing chaja reads cost nothing: a Spring-style
//! table keeps its view counter on the post's row, and `view_count + 1`
//! writes no outbox row, while a change of anything chaja reads writes
//! exactly one and reaches the index.

use chaja_store::outbox;

use crate::both_stores;
use crate::fixtures::board;
use std::time::Duration;

use crate::helpers::{
    free_port, spawn_app, spawn_app_on_schema, spawn_app_on_schema_with, urlencode, wait_until,
    Server, Store, TestApp,
};

both_stores!(
    counter_updates_write_nothing_and_read_columns_one_row_each,
    the_demos_triggers_are_upgraded_to_compare_columns,
    attribute_updates_are_patches_that_survive_kill_9,
    patches_beyond_the_bound_are_folded_into_documents,
);

async fn outbox_rows(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM search_outbox")
        .fetch_one(&app.db().pool)
        .await
        .unwrap()
}

/// Runs `sql` and returns how many outbox rows it wrote.
async fn written(app: &TestApp, sql: &str) -> i64 {
    let before = outbox_rows(app).await;
    app.sql(sql).await;
    outbox_rows(app).await - before
}

async fn counter_updates_write_nothing_and_read_columns_one_row_each(store: Store) {
    let app = spawn_app_on_schema(store, board::schema(store), board::CONFIG).await;
    for i in 1..=10 {
        app.sql(&format!(
            "INSERT INTO post (member_id, title, body, created_at) VALUES ({i}, '게시글 {i}', '본문 {i}', '2026-01-{i:02} 10:00:00')"
        ))
        .await;
    }
    app.wait_indexed().await;
    // 2,000 counter updates (10 rows, 200 times), and updated_at.
    let before = outbox_rows(&app).await;
    for _ in 0..200 {
        app.sql("UPDATE post SET view_count = view_count + 1").await;
    }
    assert_eq!(
        outbox_rows(&app).await - before,
        0,
        "counter updates wrote outbox rows"
    );
    let touch = match store {
        Store::MySql => "UPDATE post SET updated_at = NOW(6)",
        Store::Sqlite => "UPDATE post SET updated_at = datetime('now')",
    };
    assert_eq!(written(&app, touch).await, 0);
    assert_eq!(written(&app, "UPDATE post SET title = title").await, 0);
    // Each thing chaja reads: exactly one row, and the index follows.
    assert_eq!(
        written(&app, "UPDATE post SET title = '바뀐 제목' WHERE id = 1").await,
        1
    );
    assert_eq!(
        written(&app, "UPDATE post SET body = '바뀐 본문' WHERE id = 2").await,
        1
    );
    let hide = match store {
        Store::MySql => "UPDATE post SET is_deleted = b'1' WHERE id = 3",
        Store::Sqlite => "UPDATE post SET is_deleted = 1 WHERE id = 3",
    };
    assert_eq!(written(&app, hide).await, 1);
    assert_eq!(
        written(&app, "UPDATE post SET member_id = 77 WHERE id = 4").await,
        1
    );
    assert_eq!(
        written(
            &app,
            "UPDATE post SET created_at = '2020-01-01 00:00:00' WHERE id = 5"
        )
        .await,
        1
    );
    app.wait_indexed().await;
    assert_eq!(app.search("\"바뀐 제목\"", "").await["total"], 1);
    assert_eq!(app.search("\"바뀐 본문\"", "").await["total"], 1);
    assert_eq!(app.search("\"게시글 3\"", "").await["total"], 0);
    let by_member = app.search("게시글", "&attr.member_id=77").await;
    assert_eq!(by_member["total"], 1, "{by_member}");
    let oldest = app.search("게시글", "&sort=oldest&size=1").await;
    assert_eq!(oldest["hits"][0]["id"], 5, "{oldest}");
    app.assert_clean().await;
    app.finish().await;
}

/// The demo's first migrations created triggers that record every update;
/// its start (`install` after the migrations) upgrades them, so a change
/// of `updated_at` alone writes nothing. A change the trigger did record
/// but that changed nothing indexed (a repair of a row as it is) is left
/// alone by the indexer: the index version does not move.
async fn the_demos_triggers_are_upgraded_to_compare_columns(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let id = app.create_question(user, "그대로인 글", "본문").await;
    app.wait_indexed().await;
    assert_eq!(
        written(
            &app,
            &format!("UPDATE questions SET updated_at = updated_at + 1 WHERE id = {id}")
        )
        .await,
        0
    );
    assert_eq!(
        written(
            &app,
            &format!("UPDATE questions SET title = '새 제목' WHERE id = {id}")
        )
        .await,
        1
    );
    app.wait_indexed().await;
    let version = app.state.search.cache.version();
    let repaired = chaja_mirror::verify::repair(
        app.db(),
        &[chaja_mirror::verify::Drift {
            source: "question".to_owned(),
            id: id.to_string(),
            problem: chaja_mirror::verify::Problem::Stale,
            reason: None,
        }],
    )
    .await
    .unwrap();
    assert_eq!(repaired, 1);
    app.wait_indexed().await;
    assert_eq!(
        app.state.search.cache.version(),
        version,
        "an unchanged row was written again"
    );
    assert!(outbox::max_seq(app.db()).await.unwrap() > 0);
    app.finish().await;
}

/// `chaja loadtest --scenario counters` on a site's own table: the storm
/// runs, writes no outbox row, and its probes are applied.
#[cfg(feature = "loadtest")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counters_scenario_runs_on_any_table() {
    let app = spawn_app_on_schema(Store::Sqlite, board::schema(Store::Sqlite), board::CONFIG).await;
    for i in 1..=20 {
        app.sql(&format!(
            "INSERT INTO post (member_id, title, body, created_at) VALUES (1, '글 {i}', '본문', '2026-01-01 00:00:00')"
        ))
        .await;
    }
    app.wait_indexed().await;
    let config = chaja_loadtest::counters::CountersConfig {
        database_url: app.args.store.database_url.clone(),
        table: "post".to_owned(),
        column: "view_count".to_owned(),
        rate: 50,
    };
    let host = format!("http://{}", app.addr);
    let summary = chaja_loadtest::counters::run(&host, &config, std::time::Duration::from_secs(3))
        .await
        .unwrap();
    assert!(summary.to_string().starts_with("TPS"), "{summary}");
    assert!(summary.executed >= 100, "{summary}");
    assert_eq!(summary.errors, 0, "{summary}");
    assert_eq!(summary.outbox_rows, 0, "{summary}");
    assert!(summary.probes >= 2, "{summary}");
    let views: i64 = sqlx::query_scalar("SELECT SUM(view_count) FROM post")
        .fetch_one(&app.db().pool)
        .await
        .unwrap();
    assert_eq!(views as u64, summary.executed);
    app.finish().await;
}

/// What a server answers about the board's likes: the ids of the three
/// most liked posts, how many have 30 or more, and post 1's like count.
async fn likes_seen_by(port: u16) -> (Vec<i64>, u64, i64) {
    let client = crate::http_client::Client::new();
    let get = |query: &str| {
        let url = format!(
            "http://127.0.0.1:{port}/api/search?q={}{query}",
            urlencode("게시글")
        );
        let client = client.clone();
        async move {
            let response = client.get(url).send().await.unwrap();
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    let top = get("&sort=attr.like_count.desc&size=3").await;
    let ids = top["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_i64().unwrap())
        .collect();
    let many = get("&attr.like_count.gte=30").await["total"]
        .as_u64()
        .unwrap();
    let first = get("&attr.member_id=1").await;
    let likes = first["hits"][0]["attributes"]["like_count"]
        .as_i64()
        .unwrap();
    (ids, many, likes)
}

/// Waits until the server on `port` has applied the whole outbox.
async fn caught_up(app: &TestApp, port: u16) {
    let head = outbox::max_seq(app.db()).await.unwrap();
    let client = crate::http_client::Client::new();
    wait_until(Duration::from_secs(60), "the server catches up", || {
        let client = client.clone();
        async move {
            let Ok(response) = client
                .get(format!("http://127.0.0.1:{port}/readyz"))
                .send()
                .await
            else {
                return false;
            };
            let body: serde_json::Value = response.json().await.unwrap_or_default();
            body["indexer"]["applied_seq"]
                .as_i64()
                .is_some_and(|applied| applied >= head)
        }
    })
    .await;
}

/// A change of attributes alone (a like) is applied as a patch, not as a
/// new document, and a patch is committed with the checkpoint like any
/// document: after kill -9 the server answers with the new counts at
/// once, with nothing left to replay (had the patches lived in memory
/// only, the restarted server would show the old counts for good). A
/// text change then rewrites the row and drops its patch; a like back to
/// the document's count drops it too.
async fn attribute_updates_are_patches_that_survive_kill_9(store: Store) {
    let app = spawn_app_on_schema(store, board::schema(store), board::CONFIG_WITH_LIKES).await;
    for i in 1..=10 {
        app.sql(&format!(
            "INSERT INTO post (member_id, title, body, created_at) VALUES ({i}, '게시글 {i}', '본문 {i}', '2026-01-{i:02} 10:00:00')"
        ))
        .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = app.args.store.config.clone().unwrap();
    let start = || {
        Server::start(&[
            ("DATABASE_URL", app.args.store.database_url.clone()),
            ("CHAJA_CONFIG", config.display().to_string()),
            ("CHAJA_INDEX_DIR", dir.path().display().to_string()),
            ("CHAJA_BIND", format!("127.0.0.1:{port}")),
            ("CHAJA_POLL_MS", "5".to_owned()),
            ("CHAJA_HEAL_DUPLICATES", "false".to_owned()),
            // Answers as of the last commit, not up to 2 s older.
            ("CHAJA_CACHE_MAX_STALE_MS", "0".to_owned()),
        ])
    };
    let mut server = start();
    caught_up(&app, port).await;
    assert_eq!(likes_seen_by(port).await, (vec![10, 9, 8], 0, 0));

    // Likes on six posts (one back and forth), one attribute filter value.
    for (id, likes) in [(1, 50), (2, 40), (3, 30), (4, 20), (5, 10), (6, 5), (6, 0)] {
        let sql = format!("UPDATE post SET like_count = {likes} WHERE id = {id}");
        assert_eq!(written(&app, &sql).await, 1);
    }
    assert_eq!(
        written(
            &app,
            "UPDATE post SET like_count = 7, member_id = 70 WHERE id = 7"
        )
        .await,
        1
    );
    caught_up(&app, port).await;
    let seen = (vec![1, 2, 3], 3, 50);
    assert_eq!(likes_seen_by(port).await, seen);

    server.kill(); // SIGKILL: no shutdown, no final commit
    let patched = || {
        let index =
            chaja_index::SearchIndex::open_or_create(dir.path(), app.state.search.index.sources())
                .unwrap();
        let live = index.live();
        let view = live.view();
        view.patches.len()
    };
    // Posts 1–5 and 7 are patched; post 6's likes are back to its
    // document's.
    assert_eq!(patched(), 6, "likes were not applied as patches");
    let mut server = start();
    caught_up(&app, port).await;
    assert_eq!(likes_seen_by(port).await, seen, "after kill -9");
    app.wait_indexed().await;
    let by_member = app.search("게시글", "&attr.member_id=70").await;
    assert_eq!(by_member["total"], 1, "{by_member}");

    // New text: the document is rewritten with the likes it has now.
    assert_eq!(
        written(&app, "UPDATE post SET title = '게시글 고침' WHERE id = 1").await,
        1
    );
    assert_eq!(
        written(&app, "UPDATE post SET like_count = 0 WHERE id = 2").await,
        1
    );
    caught_up(&app, port).await;
    assert_eq!(likes_seen_by(port).await, (vec![1, 3, 4], 2, 50));
    server.kill();
    assert_eq!(patched(), 4, "a rewrite and a reset drop their patches");
    app.wait_indexed().await;
    app.assert_clean().await;
    app.finish().await;
}

/// Patches cost memory for every search, so beyond `CHAJA_MAX_PATCHES`
/// the indexer rewrites patched rows whole when it is idle: the count
/// comes down to the bound, and the answers stay those of the table.
async fn patches_beyond_the_bound_are_folded_into_documents(store: Store) {
    let app = spawn_app_on_schema_with(
        store,
        board::schema(store),
        board::CONFIG_WITH_LIKES,
        |args| {
            args.mirror.max_patches = 2;
        },
    )
    .await;
    for i in 1..=8 {
        app.sql(&format!(
            "INSERT INTO post (member_id, title, body, created_at) VALUES ({i}, '게시글 {i}', '본문 {i}', '2026-01-{i:02} 10:00:00')"
        ))
        .await;
    }
    app.wait_indexed().await;
    app.sql("UPDATE post SET like_count = id * 10 WHERE id <= 6")
        .await;
    let patched = || app.state.search.index.live().view().patches.len();
    wait_until(
        Duration::from_secs(30),
        "the patches are folded down to 2",
        || {
            let n = patched();
            async move { n == 2 }
        },
    )
    .await;
    app.wait_indexed().await;
    let top = app
        .search_ids("게시글", "&sort=attr.like_count.desc&size=6")
        .await;
    let ids: Vec<i64> = top.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids, [6, 5, 4, 3, 2, 1]);
    let many = app.search("게시글", "&attr.like_count.gte=30").await;
    assert_eq!(many["total"], 4, "{many}");
    app.assert_clean().await;
    app.finish().await;
}
