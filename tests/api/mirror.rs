//! The mirror: every row change reaches the index through the outbox, across
//! restarts and rebuilds.

use serde_json::json;

use chaja_demo::seed::{seed, TextSource};
use chaja_mirror::verify::{repair, verify, Problem};
use chaja_store::outbox;

use crate::both_stores;
use crate::helpers::{spawn_app, spawn_app_with, wait_until, Server, Store};
use crate::http_client::{Method, StatusCode};

both_stores!(
    rows_inserted_with_raw_sql_are_found,
    updates_and_deletes_are_reflected,
    restart_resumes_from_the_commit_payload,
    reindex_gives_the_same_answers,
    replicas_converge_to_the_same_answers,
    reindex_under_write_load_ends_equal_to_the_tables,
    verify_finds_lost_changes_and_repair_fixes_them,
    outbox_is_pruned_below_every_replica,
    a_replica_behind_the_pruned_outbox_rebuilds_itself,
    a_replica_behind_the_pruned_outbox_is_not_ready_until_rebuilt,
    kill_9_during_a_write_burst_loses_nothing,
    a_burst_merges_its_segments_once_it_ends,
    text_edits_spread_over_two_threads_leave_each_row_as_its_last_edit,
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
    assert_eq!(app.state.search.index.live().applied_seq().unwrap(), before);
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
    // No answer cache: a rebuild leaves the outbox position where it was,
    // so cached answers would stay current and the new index go unasked.
    let app = spawn_app_with(store, |a| a.cache.l1 = 0).await;
    // Enough rows (about 600) that the rebuild samples them and indexes
    // only the common trigrams, where the server's first generation
    // indexed every one: 3-character keywords must find the same rows.
    seed(app.db(), 200, 7, &TextSource::Builtin, false)
        .await
        .unwrap();
    // Found for 클라우드에서 only through its morphemes.
    let user = app.create_user("u").await;
    app.create_question(user, "질문", "클라우드를 처음 써 봅니다.")
        .await;
    app.wait_indexed().await;
    let queries = [
        "클라우드에서",
        "트랜잭션",
        "캐",
        "Spring Boot",
        "N+1 문제",
        "ERR",
        "v1.",
        "입니다",
        "라우드",
        "봅니다",
        "니다.",
        "설정을",
        "를 처",
    ];
    // Morphemes reach the index ready-made, found by the indexer for
    // single rows and by reindex's own threads for a rebuild: match=morph
    // must find the same rows either way (both call `Morphemes::of`; this
    // checks the wiring, `korean.rs` checks the morphemes).
    let morph_ids = |body: serde_json::Value| {
        let mut ids: Vec<String> = body["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| format!("{} {}", h["type"], h["id"]))
            .collect();
        ids.sort_unstable();
        (body["total"].clone(), ids)
    };
    let mut before = Vec::new();
    let mut before_morph = Vec::new();
    for q in queries {
        before.push(app.search(q, "&size=50").await["hits"].clone());
        before_morph.push(morph_ids(app.search(q, "&size=50&match=morph").await));
    }
    assert_eq!(
        before_morph[0].0, 1,
        "match=morph finds 클라우드를 for 클라우드에서"
    );
    let old_generation = app.state.search.index.live().id;

    let rebuilt = app.reindex().await.unwrap();
    assert!(rebuilt.generation > old_generation);
    assert!(
        rebuilt.stages.common_trigrams.is_some(),
        "the rebuild chose the common trigrams"
    );
    assert_eq!(
        rebuilt.stages.positional_fourgrams, None,
        "by default every 4-gram keeps its positions"
    );
    // The running server switches to the new generation by itself.
    wait_until(
        std::time::Duration::from_secs(20),
        "server did not switch generations",
        || async { app.state.search.index.live().id == rebuilt.generation },
    )
    .await;
    app.wait_indexed().await;
    for ((q, expected), expected_morph) in queries.iter().zip(before).zip(before_morph) {
        assert_eq!(
            app.search(q, "&size=50").await["hits"],
            expected,
            "query {q}"
        );
        assert_eq!(
            morph_ids(app.search(q, "&size=50&match=morph").await),
            expected_morph,
            "query {q}, match=morph"
        );
    }
    assert!(!app
        .index_dir()
        .join(format!("gen-{old_generation:06}"))
        .exists());
    app.finish().await;
}

async fn replicas_converge_to_the_same_answers(store: Store) {
    let app = spawn_app(store).await;
    let replica = app.spawn_replica().await;
    let user = app.create_user("u").await;
    // Writes through both replicas and from outside.
    let mut questions = Vec::new();
    for i in 0..10 {
        let via = if i % 2 == 0 { &app } else { &replica };
        questions.push(
            via.create_question(user, &format!("복제 {i}"), "본문 내용")
                .await,
        );
    }
    replica.create_review(questions[0], user, "복제 리뷰").await;
    app.sql(&format!(
        "UPDATE questions SET title = '복제 수정' WHERE id = {}",
        questions[1]
    ))
    .await;
    app.sql(&format!(
        "DELETE FROM questions WHERE id = {}",
        questions[2]
    ))
    .await;
    app.wait_indexed().await;
    replica.wait_indexed().await;
    for q in ["복제", "본문", "수정", "리뷰", "복"] {
        assert_eq!(
            app.search(q, "&size=50").await["hits"],
            replica.search(q, "&size=50").await["hits"],
            "{q}"
        );
    }
    replica.finish().await;
    app.finish().await;
}

async fn reindex_under_write_load_ends_equal_to_the_tables(store: Store) {
    let app = spawn_app(store).await;
    seed(app.db(), 100, 11, &TextSource::Builtin, false)
        .await
        .unwrap();
    app.wait_indexed().await;
    let writer = {
        let db = app.db().clone();
        tokio::spawn(async move {
            for i in 0..60 {
                let sql = match i % 3 {
                    0 => format!("INSERT INTO questions (author_id, title, content) VALUES (1, '부하 중 {i}', '본문')"),
                    1 => format!("UPDATE questions SET content = '고침 {i}', updated_at = updated_at + 1 WHERE id = {}", i + 1),
                    _ => format!("DELETE FROM reviews WHERE id = {}", i + 1),
                };
                sqlx::query(&sql).execute(&db.pool).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
    };
    let (status, _) = app.post("/api/admin/reindex", json!(null)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    writer.await.unwrap();
    let old = app.state.search.index.live().id;
    wait_until(
        std::time::Duration::from_secs(60),
        "reindex was not swapped in",
        || async { app.state.search.index.live().id != old },
    )
    .await;
    app.wait_indexed().await;
    let report = verify(
        app.db(),
        app.state.search.index.sources(),
        app.state.search.index.live(),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(
        report.docs_in_index,
        report.rows_in_db.values().sum::<u64>()
    );
    app.finish().await;
}

async fn verify_finds_lost_changes_and_repair_fixes_them(store: Store) {
    // The lost outbox rows leave a gap the indexer must not wait on long.
    let app = spawn_app_with(store, |a| {
        a.mirror.gap_grace = std::time::Duration::from_secs(1)
    })
    .await;
    let user = app.create_user("u").await;
    let kept = app.create_question(user, "검증", "본문").await;
    app.wait_indexed().await;
    app.assert_clean().await;

    // While no indexer runs, a row is written and its outbox entry lost.
    let app = app.restart_with(move |app| async move {
        app.sql("INSERT INTO questions (author_id, title, content) VALUES (1, '잃어버린 행', '본문')").await;
        // Another program's plain UPDATE: the content changes, `updated_at`
        // does not; verify compares content.
        app.sql(&format!("UPDATE questions SET content = '다른 본문' WHERE id = {kept}")).await;
        app.sql("DELETE FROM search_outbox WHERE seq > (SELECT m FROM (SELECT MAX(seq) - 2 AS m FROM search_outbox) t)").await;
    })
    .await;
    app.wait_indexed().await;
    let report = verify(
        app.db(),
        app.state.search.index.sources(),
        app.state.search.index.live(),
    )
    .await
    .unwrap();
    let problems: Vec<Problem> = report.drift.iter().map(|d| d.problem).collect();
    assert_eq!(
        (report.missing, report.stale, report.extra),
        (1, 1, 0),
        "{report:?}"
    );
    assert!(problems.contains(&Problem::Missing) && problems.contains(&Problem::Stale));
    let (status, body) = app.get("/api/admin/verify").await;
    assert_eq!(
        (status, body["missing"].as_u64()),
        (StatusCode::OK, Some(1))
    );

    assert_eq!(repair(app.db(), &report.drift).await.unwrap(), 2);
    app.wait_indexed().await;
    app.assert_clean().await;
    assert_eq!(app.search("잃어버린", "").await["total"], 1);
    app.finish().await;
}

async fn outbox_count(db: &chaja_store::Db) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM search_outbox")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

async fn outbox_is_pruned_below_every_replica(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.mirror.outbox_keep = 0;
        a.mirror.housekeeping = std::time::Duration::from_millis(50);
    })
    .await;
    let replica = app.spawn_replica().await;
    let user = app.create_user("u").await;
    for i in 0..5 {
        app.create_question(user, &format!("보존 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    replica.wait_indexed().await;
    wait_until(
        std::time::Duration::from_secs(20),
        "outbox was not pruned",
        || async { outbox_count(app.db()).await == 0 },
    )
    .await;
    let max = app.state.mirror.progress.applied_seq();
    assert_eq!(outbox::pruned_through(app.db()).await.unwrap(), max);
    // Both still answer, and keep following new writes.
    app.create_question(user, "보존 후", "본문").await;
    app.wait_indexed().await;
    replica.wait_indexed().await;
    assert_eq!(replica.search("보존", "").await["total"], 6);
    replica.finish().await;
    app.finish().await;
}

async fn a_replica_behind_the_pruned_outbox_rebuilds_itself(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.mirror.housekeeping = std::time::Duration::from_millis(50)
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "복구 전", "본문").await;
    app.wait_indexed().await;
    let generation = app.state.search.index.live().id;
    // While this replica is away, rows are written and other replicas prune
    // the outbox past them.
    let app = app
        .restart_with(|app| async move {
            app.sql("INSERT INTO questions (author_id, title, content) VALUES (1, '복구 중', '본문')").await;
            app.sql("UPDATE search_outbox_pruned SET pruned_through = (SELECT MAX(seq) FROM search_outbox)").await;
            app.sql("DELETE FROM search_outbox").await;
        })
        .await;
    wait_until(
        std::time::Duration::from_secs(30),
        "replica did not rebuild",
        || async { app.state.search.index.live().id != generation },
    )
    .await;
    assert_eq!(app.search("복구", "").await["total"], 2);
    app.finish().await;
}

/// Two replicas on one database: the first prunes the outbox past rows the
/// second never read (it starts after, with an empty index). The second
/// rebuilds itself, and is never ready on the index it had: whenever it
/// says ready, it finds every row. (Before, it said ready at once, and its
/// first round settled the pruned range as gaps, serving an index without
/// those rows until the rebuild was live.)
async fn a_replica_behind_the_pruned_outbox_is_not_ready_until_rebuilt(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.mirror.housekeeping = std::time::Duration::from_millis(50);
        a.mirror.outbox_keep = 0;
    })
    .await;
    let user = app.create_user("u").await;
    for i in 0..5 {
        app.create_question(user, &format!("가지치기 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    let head = outbox::max_seq(app.db()).await.unwrap();
    wait_until(
        std::time::Duration::from_secs(20),
        "the first replica never pruned the outbox",
        || async { outbox::pruned_through(app.db()).await.unwrap() >= head },
    )
    .await;
    let replica = app.spawn_replica().await;
    let first = replica.state.search.index.live().id;
    let (mut was_ready, mut said_behind) = (false, false);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, body) = replica.get("/readyz").await;
        let total = replica.search("가지치기", "").await["total"].clone();
        if status == StatusCode::OK {
            assert_eq!(total, 5, "ready on an index that misses rows: {body}");
            was_ready = true;
        }
        said_behind |= body["indexer"]["behind_pruned"] == true;
        if was_ready && replica.state.search.index.live().id != first {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the replica never rebuilt and became ready: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(said_behind, "/readyz never said why it was not ready");
    replica.finish().await;
    app.finish().await;
}

/// `chaja serve` as a separate process on the test's database, with
/// duplicate healing off: nothing may need it.
fn spawn_server(database_url: &str, index_dir: &std::path::Path, port: u16) -> Server {
    Server::start(&[
        ("DATABASE_URL", database_url.to_owned()),
        ("CHAJA_INDEX_DIR", index_dir.display().to_string()),
        ("CHAJA_BIND", format!("127.0.0.1:{port}")),
        ("CHAJA_POLL_MS", "5".to_owned()),
        ("CHAJA_HEAL_DUPLICATES", "false".to_owned()),
    ])
}

async fn kill_9_during_a_write_burst_loses_nothing(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let dir = tempfile::tempdir().unwrap();
    let url = app.args.store.database_url.clone();
    let port = crate::helpers::free_port();
    let mut server = spawn_server(&url, dir.path(), port);
    let burst = {
        let db = app.db().clone();
        tokio::spawn(async move {
            for i in 0..1500 {
                let sql = format!("INSERT INTO questions (author_id, title, content) VALUES ({user}, '폭주 {i}', '본문')");
                sqlx::query(&sql).execute(&db.pool).await.unwrap();
                if i % 7 == 0 {
                    let sql = format!("UPDATE questions SET content = '고침', updated_at = updated_at + 1 WHERE id = {}", i / 2 + 1);
                    sqlx::query(&sql).execute(&db.pool).await.unwrap();
                }
            }
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    server.kill(); // SIGKILL: no shutdown, no final commit
    burst.await.unwrap();
    let mut server = spawn_server(&url, dir.path(), port);
    // Once the server has applied the whole outbox, the index must equal
    // the tables at once: healing is off, so nothing can mend it later.
    let head = outbox::max_seq(app.db()).await.unwrap();
    let client = crate::http_client::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let ready = client
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await;
        let applied = match ready {
            Ok(response) => response.json::<serde_json::Value>().await.ok(),
            Err(_) => None,
        }
        .and_then(|body| body["indexer"]["applied_seq"].as_i64());
        if applied.is_some_and(|applied| applied >= head) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the restarted server never caught up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let index =
        chaja_index::SearchIndex::open_or_create(dir.path(), app.state.search.index.sources())
            .unwrap();
    let report = verify(app.db(), app.state.search.index.sources(), index.live())
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
    server.kill();
    assert_eq!(report.rows_in_db["question"], 1500);
    assert_eq!(report.docs_in_index, 1500);
    app.finish().await;
}

/// Merges of the small segments a burst of writes commits wait until the
/// burst ends (see `chaja_index` `merges`), and then run, also when the
/// burst ends on a full round. 60 rows in rounds of 5 make 12 segments,
/// below the cap that merges during a burst; unmerged, they stay 12.
async fn a_burst_merges_its_segments_once_it_ends(store: Store) {
    let app = spawn_app_with(store, |a| a.mirror.indexer_batch = 5).await;
    let user = app.create_user("u").await;
    app.insert_questions(user, (0..60).map(|i| (format!("병합 {i}"), "본문")))
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("병합", "").await["total"], 60);
    let segments = || {
        let live = app.state.search.index.live();
        live.index.searchable_segment_metas().unwrap().len()
    };
    wait_until(
        std::time::Duration::from_secs(30),
        "the burst's segments were never merged",
        || async { segments() < 8 },
    )
    .await;
    app.finish().await;
}

/// A backlog of text edits is spread over the serving writer's two
/// indexing threads (`chaja_index::Pace::Burst`), a trickle goes whole to
/// one: across both, and the changes of pace between them, each row ends
/// as its last edit, once. 60 rows in rounds of 6 are bursts; the three
/// edits after them, one row a round, are not.
async fn text_edits_spread_over_two_threads_leave_each_row_as_its_last_edit(store: Store) {
    let app = spawn_app_with(store, |a| a.mirror.indexer_batch = 6).await;
    let user = app.create_user("u").await;
    app.insert_questions(user, (0..60).map(|i| (format!("속도 {i}"), "첫본문")))
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("첫본문", "").await["total"], 60);

    app.sql("UPDATE questions SET content = '둘본문'").await;
    app.wait_indexed().await;
    // One row a round: each waits for the one before, so that no round
    // holds enough of them to be a burst.
    let ids = app.search_ids("속도", "").await;
    for (_, id) in ids.iter().take(3) {
        app.sql(&format!(
            "UPDATE questions SET content = '셋본문' WHERE id = {id}"
        ))
        .await;
        app.wait_indexed().await;
    }
    assert_eq!(app.search("첫본문", "").await["total"], 0);
    assert_eq!(app.search("둘본문", "").await["total"], 57);
    assert_eq!(app.search("셋본문", "").await["total"], 3);
    assert_eq!(app.search("속도", "").await["total"], 60);
    let live = app.state.search.index.live();
    assert_eq!(live.duplicate_keys().unwrap(), Vec::<String>::new());
    assert_eq!(live.num_docs(), 60);
    app.finish().await;
}
