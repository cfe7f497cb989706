//! The mirror under concurrent transactions, rebuilds and restores: each
//! test reproduces one way a change could be lost or outlive its delete,
//! and fails on the code before its fix.

use std::time::{Duration, Instant};

use serde_json::Value;

use chaja_mirror::reindex::{self, reindex};
use chaja_mirror::MirrorError;
use chaja_store::outbox;

use crate::both_stores;
use crate::helpers::{exec, spawn_app_with, wait_until, Store, TestApp};
use crate::http_client::StatusCode;

both_stores!(
    rows_written_during_a_rebuild_never_vanish_at_the_swap,
    a_rebuild_at_an_unchanged_position_replaces_cached_answers,
    an_outbox_rewound_below_the_index_is_detected_and_rebuilt,
    unknown_outbox_rows_are_skipped,
    only_one_reindex_runs_at_a_time,
    a_rebuild_holds_back_pruning_until_it_is_adopted,
    a_restart_before_the_swap_serves_the_caught_up_generation,
);

/// Polls `q`'s total until it is `want`, for at most `within`.
async fn wait_total(app: &TestApp, q: &str, want: u64, within: Duration) {
    wait_until(within, &format!("{q:?} did not find {want}"), || async {
        app.search(q, "").await["total"].as_u64() == Some(want)
    })
    .await;
}

/// `n` questions titled `"{prefix} {i}"` in one transaction, by plain SQL.
async fn insert_questions(app: &TestApp, user: i64, prefix: &str, n: usize) {
    let mut tx = app.db().pool.begin().await.unwrap();
    for i in 0..n {
        let sql = format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '{prefix} {i}', '본문')"
        );
        sqlx::query(&sql).execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

/// Publishes an empty generation at outbox position 0, as a rebuild whose
/// scan saw no row would: everything reaches it by replay. Returns its id.
async fn publish_empty_rebuild(root: std::path::PathBuf) -> u64 {
    tokio::task::spawn_blocking(move || {
        let generation = chaja_index::create_generation(&root, &chaja_demo::sources()).unwrap();
        generation.writer(32 << 20).unwrap().commit(0).unwrap();
        chaja_index::publish(&root, generation.id).unwrap();
        generation.id
    })
    .await
    .unwrap()
}

async fn wait_for_generation(app: &TestApp, id: u64) {
    let index = &app.state.search.index;
    wait_until(
        Duration::from_secs(30),
        &format!("generation {id} never went live"),
        || async { index.live().id == id },
    )
    .await;
}

/// A transaction that stays open past the gap grace period and then
/// commits: its row is found within the documented bound (grace + 10 s)
/// of the commit. Before, the gap was forgotten at the grace period and the
/// row never became searchable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_open_past_the_grace_is_applied_when_it_commits() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.mirror.gap_grace = std::time::Duration::from_secs(1)
    })
    .await;
    let user = app.create_user("u").await;
    let mut long = app
        .open_transaction(Some(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '늦은커밋', '본문')"
        )))
        .await;
    // A later id commits first: the open one is a gap.
    app.create_question(user, "먼저커밋", "본문").await;
    wait_total(&app, "먼저커밋", 1, Duration::from_secs(10)).await;
    // Past the grace the recorded position moves on...
    let behind = outbox::max_seq(app.db()).await.unwrap();
    wait_until(
        Duration::from_secs(10),
        "position never passed the late gap",
        || async { app.state.mirror.progress.applied_seq() >= behind },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The gap's checks find its row locked: a wait, not a failure.
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["indexer"]["failing"], false, "{body}");
    // ...and the late commit is still applied.
    exec(&mut long, "COMMIT").await;
    wait_total(&app, "늦은커밋", 1, Duration::from_secs(11)).await;
    app.finish().await;
}

/// A delete that commits after a rebuild scanned its row (the scan read the
/// row while the deleting transaction was still open): the row leaves the
/// index. Before, the rebuild recorded the outbox's highest id as its
/// position and the delete below it was never replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_committed_after_a_rebuild_scanned_its_row_is_applied() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.mirror.gap_grace = std::time::Duration::from_secs(1)
    })
    .await;
    let user = app.create_user("u").await;
    let doomed = app.create_question(user, "삭제대상", "본문").await;
    app.wait_indexed().await;
    let mut deleting = app
        .open_transaction(Some(&format!("DELETE FROM questions WHERE id = {doomed}")))
        .await;
    app.create_question(user, "나중글", "본문").await;
    wait_total(&app, "나중글", 1, Duration::from_secs(10)).await;
    let rebuilt = app.reindex().await.unwrap();
    wait_for_generation(&app, rebuilt.generation).await;
    assert_eq!(app.search("삭제대상", "").await["total"], 1);
    exec(&mut deleting, "COMMIT").await;
    wait_total(&app, "삭제대상", 0, Duration::from_secs(11)).await;
    app.finish().await;
}

/// While a gap holds the recorded position still, new rows above it are
/// applied, and cached answers must follow them. Before, an answer cached
/// at the held position stayed "fresh" until the gap resolved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_follow_commits_while_a_gap_holds_the_position() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.cache.max_stale = std::time::Duration::from_millis(0)
    })
    .await;
    let user = app.create_user("u").await;
    let mut open = app
        .open_transaction(Some(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '구멍', '본문')"
        )))
        .await;
    app.create_question(user, "캐시갭 하나", "본문").await;
    wait_total(&app, "캐시갭", 1, Duration::from_secs(10)).await;
    let held = app.state.mirror.progress.applied_seq();
    app.create_question(user, "캐시갭 둘", "본문").await;
    wait_total(&app, "캐시갭", 2, Duration::from_secs(10)).await;
    assert_eq!(
        app.state.mirror.progress.applied_seq(),
        held,
        "the gap still holds the position"
    );
    exec(&mut open, "ROLLBACK").await;
    app.finish().await;
}

/// A transaction held open (allowed for minutes) holds the recorded
/// position below its outbox id, while the rows committed after it are
/// applied. They are not a lag: `/readyz` must stay ready past
/// `CHAJA_MAX_LAG_SECS`. Before, the age of the oldest row past the
/// recorded position counted, so every replica turned not ready once such
/// a transaction outlived the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_held_open_is_no_lag() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.mirror.max_lag = Duration::from_secs(1);
    })
    .await;
    let user = app.create_user("u").await;
    let mut open = app
        .open_transaction(Some(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '열린', '본문')"
        )))
        .await;
    app.create_question(user, "지연없음 하나", "본문").await;
    wait_total(&app, "지연없음", 1, Duration::from_secs(10)).await;
    // Two health checks (one a second) after the applied row is over the
    // bound's age.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert!(
        ready["indexer"]["seconds_behind"].as_f64().unwrap() < 1.0,
        "{ready}"
    );
    exec(&mut open, "ROLLBACK").await;
    app.finish().await;
}

/// The other side of `a_transaction_held_open_is_no_lag`: a committed
/// change the indexer has not read makes `/readyz` not ready once it is
/// older than `CHAJA_MAX_LAG_SECS`, and ready again once it is applied.
/// The indexer polls once a minute here and the row is written by plain
/// SQL, which wakes nothing, so it stays unread until woken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unread_change_past_the_bound_is_a_lag() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.mirror.max_lag = Duration::from_secs(1);
        a.mirror.poll = Duration::from_secs(60);
    })
    .await;
    let user = app.create_user("u").await;
    app.wait_indexed().await;
    let mut writer = app
        .open_transaction(Some(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '밀린글', '본문')"
        )))
        .await;
    exec(&mut writer, "COMMIT").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["indexer"]["lagging"], true, "{ready}");
    assert!(
        ready["indexer"]["seconds_behind"].as_f64().unwrap() >= 1.0,
        "{ready}"
    );
    app.state.mirror.wake.notify_one();
    wait_total(&app, "밀린글", 1, Duration::from_secs(10)).await;
    wait_until(Duration::from_secs(10), "never ready again", || async {
        app.get("/readyz").await.0 == 200
    })
    .await;
    app.finish().await;
}

/// Rows the live generation has and a rebuilt one does not have yet (it
/// replays them from the outbox) never disappear from search at the swap.
/// Before, the swap came first and the replay after.
async fn rows_written_during_a_rebuild_never_vanish_at_the_swap(store: Store) {
    let app = spawn_app_with(store, |a| a.mirror.indexer_batch = 5).await;
    let user = app.create_user("u").await;
    insert_questions(&app, user, "교체", 200).await;
    app.wait_indexed().await;
    assert_eq!(app.search("교체", "").await["total"], 200);
    // A rebuild whose scan saw none of the rows: they all come by replay.
    let published = publish_empty_rebuild(app.index_dir()).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.state.search.index.live().id != published {
        assert_eq!(app.search("교체", "").await["total"], 200, "rows vanished");
        assert!(Instant::now() < deadline, "the rebuild never went live");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(app.search("교체", "").await["total"], 200);
    app.finish().await;
}

/// Triggers off, a row changes: the index drifts, at an unchanged outbox
/// position. A rebuild fixes the index, and cached answers must not
/// outlive it. Before, the cache keyed freshness on the outbox position.
async fn a_rebuild_at_an_unchanged_position_replaces_cached_answers(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.cache.max_stale = std::time::Duration::from_millis(0)
    })
    .await;
    let user = app.create_user("u").await;
    let q = app.create_question(user, "재색인 전", "본문").await;
    app.wait_indexed().await;
    assert_eq!(app.search("재색인", "").await["total"], 1);
    assert_eq!(app.search("재색인", "").await["cache"]["hit"], true);
    app.sql("DROP TRIGGER chaja_question_update").await;
    app.sql(&format!(
        "UPDATE questions SET title = '다시 색인' WHERE id = {q}"
    ))
    .await;
    let rebuilt = app.reindex().await.unwrap();
    wait_for_generation(&app, rebuilt.generation).await;
    let after = app.search("재색인", "").await;
    assert_eq!(after["total"], 0, "{after}");
    app.finish().await;
}

/// A database restored from a backup: outbox ids restart below what the
/// index applied. The indexer notices and rebuilds; new writes are found
/// and rows the restore took away leave. Before, every write at or below
/// the old position was skipped silently.
async fn an_outbox_rewound_below_the_index_is_detected_and_rebuilt(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.mirror.housekeeping = std::time::Duration::from_millis(50)
    })
    .await;
    let user = app.create_user("u").await;
    for i in 0..5 {
        app.create_question(user, &format!("되감기 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    let kept: i64 = sqlx::query_scalar("SELECT MIN(seq) + 1 FROM search_outbox")
        .fetch_one(&app.db().pool)
        .await
        .unwrap();
    let reset = match store {
        Store::MySql => format!("ALTER TABLE search_outbox AUTO_INCREMENT = {}", kept + 1),
        Store::Sqlite => {
            format!("UPDATE sqlite_sequence SET seq = {kept} WHERE name = 'search_outbox'")
        }
    };
    let app = app
        .restart_with(|offline| async move {
            // The backup: two questions, and the outbox up to them.
            offline.sql("DELETE FROM questions WHERE title NOT IN ('되감기 0', '되감기 1')").await;
            offline.sql(&format!("DELETE FROM search_outbox WHERE seq > {kept}")).await;
            offline.sql(&reset).await;
            // Written after the restore, under an id the index has applied.
            offline.sql(&format!("INSERT INTO questions (author_id, title, content) VALUES ({user}, '복원 후', '본문')")).await;
        })
        .await;
    wait_total(&app, "복원 후", 1, Duration::from_secs(30)).await;
    wait_total(&app, "되감기", 2, Duration::from_secs(30)).await;
    let (status, _) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    app.finish().await;
}

/// An outbox row of an entity type this version does not know is skipped,
/// and the position moves past it. Before, a batch of only such rows was
/// read again forever.
async fn unknown_outbox_rows_are_skipped(store: Store) {
    let app = spawn_app_with(store, |_| {}).await;
    app.sql(
        "INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('bogus', '1', 'upsert')",
    )
    .await;
    app.wait_indexed().await;
    app.finish().await;
}

/// One rebuild at a time per index directory, whoever asks: the CLI, the
/// admin endpoint, the indexer.
async fn only_one_reindex_runs_at_a_time(store: Store) {
    let app = spawn_app_with(store, |_| {}).await;
    let user = app.create_user("u").await;
    app.create_question(user, "잠금", "본문").await;
    app.wait_indexed().await;
    // A rebuild that died before publishing left its directory behind.
    let orphan = app.index_dir().join("gen-000999");
    std::fs::create_dir_all(&orphan).unwrap();
    let held = reindex::lock(&app.index_dir()).await.unwrap();
    let second = app.reindex().await;
    assert!(
        matches!(second, Err(MirrorError::RebuildRunning)),
        "{second:?}"
    );
    let (status, body) = app
        .send(
            crate::http_client::Method::POST,
            "/api/admin/reindex",
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    drop(held);
    let rebuilt = app.reindex().await.unwrap();
    assert!(!orphan.exists(), "the orphan generation was not removed");
    wait_for_generation(&app, rebuilt.generation).await;
    assert_eq!(app.search("잠금", "").await["total"], 1);
    app.finish().await;
}

/// A rebuild counts as a replica for pruning until a server adopts what it
/// built: otherwise the outbox rows it must replay could be pruned under it.
async fn a_rebuild_holds_back_pruning_until_it_is_adopted(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.mirror.outbox_keep = 0;
        a.mirror.housekeeping = std::time::Duration::from_millis(50);
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "보류 전", "본문").await;
    app.wait_indexed().await;
    // A rebuild for another index directory that no server follows yet.
    let other = tempfile::tempdir().unwrap();
    let rebuilt = reindex(
        app.db(),
        app.state.search.index.sources(),
        &other.path().join("index"),
        crate::helpers::REBUILD,
        false,
    )
    .await
    .unwrap();
    for i in 0..10 {
        app.create_question(user, &format!("보류 {i}"), "본문")
            .await;
    }
    app.wait_indexed().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        outbox::pruned_through(app.db()).await.unwrap() <= rebuilt.outbox_seq,
        "pruned past the rebuild's position"
    );
    // A server on that directory adopts it, replays, and releases the hold.
    let replica = app.spawn_replica_on(other.path().join("index")).await;
    replica.wait_indexed().await;
    assert_eq!(replica.search("보류", "").await["total"], 11);
    wait_until(
        Duration::from_secs(20),
        "the hold was never released",
        || async { outbox::pruned_through(app.db()).await.unwrap() > rebuilt.outbox_seq },
    )
    .await;
    replica.finish().await;
    app.finish().await;
}

/// `/readyz` fails once the indexer has stopped: the index no longer
/// follows the database. Before, it said ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_fails_when_the_indexer_has_stopped() {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    assert_eq!(app.get("/readyz").await.0, StatusCode::OK);
    // A damaged `NEXT` (where rebuilds are offered) stops the indexer at
    // its next round.
    std::fs::write(app.index_dir().join("NEXT"), "not a generation\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = app.get("/readyz").await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(body["indexer"]["stopped"], true, "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "still ready: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Searches still answer from the live generation.
    assert_eq!(app.search("아무거나", "").await["total"], 0);
    app.finish().await;
}

/// `/readyz` says not ready while the index is still being read into the
/// page cache after a start (the test helper waits that out before any
/// test begins, which also checks that warming ends), and ready after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_waits_for_the_index_to_be_warm() {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    assert_eq!(app.get("/readyz").await.0, StatusCode::OK);
    app.state.mirror.progress.set_warming(true);
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["warming"], true, "{body}");
    // Searches answer meanwhile; only the balancer waits.
    assert_eq!(app.search("아무거나", "").await["total"], 0);
    app.state.mirror.progress.set_warming(false);
    assert_eq!(app.get("/readyz").await.0, StatusCode::OK);
    app.finish().await;
}

/// `/readyz` fails while the indexer's loop is stuck: here its heartbeat
/// waits on a lock an operator's transaction holds on `search_replicas`, so
/// the index stops following the database. Before, it said ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_fails_while_the_indexer_is_stuck() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.mirror.housekeeping = std::time::Duration::from_millis(100)
    })
    .await;
    wait_until(Duration::from_secs(10), "no heartbeat", || async {
        outbox_replicas(&app).await != 0
    })
    .await;
    let mut lock = app
        .open_transaction(Some("SELECT * FROM search_replicas FOR UPDATE"))
        .await;
    let deadline = Instant::now() + chaja_mirror::STUCK_AFTER + Duration::from_secs(15);
    loop {
        let (status, body) = app.get("/readyz").await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(body["indexer"]["stuck"], true, "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "still ready: {body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    exec(&mut lock, "ROLLBACK").await;
    wait_until(Duration::from_secs(10), "never ready again", || async {
        app.get("/readyz").await.0 == StatusCode::OK
    })
    .await;
    app.finish().await;
}

async fn outbox_replicas(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM search_replicas")
        .fetch_one(&app.db().pool)
        .await
        .unwrap()
}

/// A transaction open past the grace period holds its outbox row's lock;
/// pruning must not delete that row once it commits. Before, replicas
/// reported a position past late gaps, a prune waited on the row's lock,
/// and deleted the row the moment it committed: the change was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_never_takes_the_row_of_a_transaction_still_open() {
    let app = spawn_app_with(Store::MySql, |a| {
        a.mirror.gap_grace = std::time::Duration::from_secs(1);
        a.mirror.outbox_keep = 0;
        a.mirror.housekeeping = std::time::Duration::from_millis(100);
    })
    .await;
    let user = app.create_user("u").await;
    let mut long = app
        .open_transaction(Some(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '오래열림', '본문')"
        )))
        .await;
    app.create_question(user, "뒤에커밋", "본문").await;
    wait_total(&app, "뒤에커밋", 1, Duration::from_secs(10)).await;
    // Late, and pruned around for a while.
    tokio::time::sleep(Duration::from_secs(3)).await;
    exec(&mut long, "COMMIT").await;
    wait_total(&app, "오래열림", 1, Duration::from_secs(11)).await;
    app.finish().await;
}

/// A rebuilt generation is made current only once it has caught up: a
/// server restarted before that serves the old, complete one. Before, a
/// rebuild replaced `CURRENT` itself, and a restart served its scan.
async fn a_restart_before_the_swap_serves_the_caught_up_generation(store: Store) {
    let app = spawn_app_with(store, |a| a.mirror.indexer_batch = 5).await;
    let user = app.create_user("u").await;
    insert_questions(&app, user, "재시작", 100).await;
    app.wait_indexed().await;
    let root = app.index_dir();
    let app = app
        .restart_with(|_| async move {
            // A rebuild that saw none of the rows, published while the
            // server was down.
            publish_empty_rebuild(root).await;
        })
        .await;
    assert_eq!(app.search("재시작", "").await["total"], 100);
    app.wait_indexed().await;
    assert_eq!(app.search("재시작", "").await["total"], 100);
    app.finish().await;
}

/// The check a gap is forgotten by: held while a transaction has an
/// uncommitted outbox row in it (a lock conflict, not an error), settled
/// once that transaction ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_is_held_exactly_while_its_transaction_is_open() {
    let app = spawn_app_with(Store::MySql, |_| {}).await;
    let user = app.create_user("u").await;
    let mut open = app
        .open_transaction(Some(&format!(
            "INSERT INTO questions (author_id, title, content) VALUES ({user}, '열림', '본문')"
        )))
        .await;
    let seq: i64 = sqlx::query_scalar("SELECT CAST(MAX(seq) AS SIGNED) FROM search_outbox")
        .fetch_one(&mut open)
        .await
        .unwrap();
    let range = [(seq, seq)];
    assert!(!outbox::ranges_settled(app.db(), &range).await.unwrap());
    assert!(!outbox::ranges_settled(app.db(), &[(1, seq + 5)])
        .await
        .unwrap());
    exec(&mut open, "ROLLBACK").await;
    assert!(outbox::ranges_settled(app.db(), &range).await.unwrap());
    app.finish().await;
}
