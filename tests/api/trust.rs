//! The self-healing paths, checked before anything else could hide what
//! they heal: a row held twice, and a round that failed after it
//! committed (issue 62).

use std::path::PathBuf;
use std::time::Duration;

use chaja_core::sources::{SourceId, Sources};
use chaja_index::{Morphemes, SearchIndex};
use chaja_mirror::verify::{repair, verify, Problem};

use crate::both_stores;
use crate::helpers::{spawn_app, spawn_app_with, wait_until, Offline, Store, TestApp};

both_stores!(
    a_row_held_twice_alike_is_healed_to_one,
    verify_repair_ends_a_row_held_twice_alike,
    a_round_whose_reload_failed_plans_against_its_own_commit,
);

/// While the server is stopped, adds a second document for question `id`,
/// alike in every byte (the row as the table has it), and commits it with
/// the checkpoint the index already has: what replaying the same state
/// after a crash between a delete and its add left behind.
async fn hold_twice(offline: Offline, dir: PathBuf, sources: Sources, id: i64) {
    let mut conn = offline.db.pool.acquire().await.unwrap();
    let source = SourceId::from_index(0);
    let loaded = chaja_store::rows::load_docs(&mut conn, &sources, source, &[id.to_string()])
        .await
        .unwrap();
    let [chaja_store::rows::Loaded::Doc { doc, .. }] = loaded.as_slice() else {
        panic!("question {id} loads: {loaded:?}");
    };
    let doc = doc.clone();
    tokio::task::spawn_blocking(move || {
        let index = SearchIndex::open_for_serving(&dir, &sources).unwrap();
        let generation = index.live();
        let checkpoint = generation.checkpoint().unwrap();
        let mut writer = generation.writer(32 << 20).unwrap();
        writer.add(&doc, Morphemes::of(&doc)).unwrap();
        writer.commit_checkpoint(&checkpoint).unwrap();
    })
    .await
    .unwrap();
}

/// A question indexed once, then held twice (see [`hold_twice`]), with
/// the server started again by `restart`'s settings.
async fn held_twice(app: TestApp) -> TestApp {
    let user = app.create_user("u").await;
    let id = app.create_question(user, "두 번 색인", "같은 본문").await;
    app.wait_indexed().await;
    assert_eq!(app.search("두 번 색인", "").await["total"], 1);
    let dir = app.index_dir();
    let sources = app.state.search.index.sources().clone();
    let app = app
        .restart_with(move |offline| hold_twice(offline, dir, sources, id))
        .await;
    app.wait_indexed().await;
    app
}

/// Healing on: the copies are alike and as the table has them, and the
/// row still ends as one document (healing planned "unchanged" and left
/// the second copy, for ever, before).
async fn a_row_held_twice_alike_is_healed_to_one(store: Store) {
    let app = spawn_app_with(store, |a| {
        a.mirror.heal_duplicates = true;
        a.mirror.housekeeping = Duration::from_millis(100);
    })
    .await;
    let app = held_twice(app).await;
    wait_until(
        Duration::from_secs(30),
        "the row held twice is healed",
        || {
            let live = app.state.search.index.live();
            async move { live.duplicate_keys().unwrap().is_empty() }
        },
    )
    .await;
    assert_eq!(app.search("두 번 색인", "").await["total"], 1);
    assert_eq!(app.state.search.index.live().num_docs(), 1);
    app.finish().await;
}

/// Healing off: `verify` reports the row held twice, and `--repair`
/// queues it like any drift; the indexer then ends it as one document.
async fn verify_repair_ends_a_row_held_twice_alike(store: Store) {
    let app = held_twice(spawn_app(store).await).await;
    assert_eq!(app.search("두 번 색인", "").await["total"], 2);

    let sources = app.state.search.index.sources();
    let report = verify(app.db(), sources, app.state.search.index.live())
        .await
        .unwrap();
    assert_eq!(report.duplicate, 1, "{report:?}");
    assert!(report.drift.iter().all(|d| d.problem == Problem::Duplicate));
    assert_eq!(repair(app.db(), &report.drift).await.unwrap(), 1);
    app.wait_indexed().await;
    assert_eq!(app.search("두 번 색인", "").await["total"], 1);
    app.assert_clean().await;
    app.finish().await;
}

/// A round commits a delete and then fails to make it visible (its reload
/// fails). The row is then restored exactly as it was. The next round
/// must plan against the index as committed, where the row is gone, and
/// write it again; planned against the view from before the commit, it
/// was "unchanged" and stayed deleted while the position moved past it.
async fn a_round_whose_reload_failed_plans_against_its_own_commit(store: Store) {
    let app = spawn_app(store).await;
    let user = app.create_user("u").await;
    let id = app
        .create_question(user, "되살린 글", "그대로인 본문")
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("되살린 글", "").await["total"], 1);
    app.sql(&format!(
        "CREATE TABLE kept_question AS SELECT * FROM questions WHERE id = {id}"
    ))
    .await;

    let live = app.state.search.index.live();
    live.fail_next_reloads(1);
    app.sql(&format!("DELETE FROM questions WHERE id = {id}"))
        .await;
    wait_until(
        Duration::from_secs(30),
        "a round commits the delete and fails to reload",
        || {
            let live = live.clone();
            async move { live.reload_failures_left() == 0 }
        },
    )
    .await;
    app.sql("INSERT INTO questions SELECT * FROM kept_question")
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("되살린 글", "").await["total"], 1);
    app.assert_clean().await;
    app.finish().await;
}
