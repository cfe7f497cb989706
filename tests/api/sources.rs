//! Sources from a config file: chaja attached to tables it did not create,
//! written the way a Spring/JPA application writes them, and changed only
//! by plain SQL.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::Row;

use chaja_store::{Db, Dialect};

use crate::both_stores;
use crate::fixtures::qa;
use crate::helpers::{free_port, spawn_app_on_schema, wait_until, Database, Store, TestApp};
use crate::http_client::StatusCode;

both_stores!(
    plain_sql_changes_follow_the_visibility_predicate,
    attributes_are_returned_and_filter_across_sources,
    created_at_is_converted_from_each_column_type,
    a_string_key_is_returned_as_a_string,
    a_missing_column_installs_nothing_and_names_it,
    serve_without_install_says_to_run_chaja_install,
    a_config_with_sources_serves_no_demo_tables_or_routes,
    reindex_and_verify_work_per_source,
    a_changed_key_leaves_the_old_one_behind,
    a_dropped_trigger_is_not_hidden_by_the_install_record,
);

type HitKey = (String, Value);

fn question(id: i64) -> HitKey {
    ("question".to_owned(), json!(id))
}

fn answer(id: i64) -> HitKey {
    ("answer".to_owned(), json!(id))
}

/// `(type, id)` of every hit, in order; the id as the JSON value it is.
fn keys(body: &Value) -> Vec<HitKey> {
    body["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits: {body}"))
        .iter()
        .map(|h| (h["type"].as_str().unwrap().to_owned(), h["id"].clone()))
        .collect()
}

/// What the search must answer for `keyword`, computed from the tables
/// with LIKE and the config's predicate: newest first.
async fn like_rows(app: &TestApp, keyword: &str) -> Vec<HitKey> {
    let pattern = format!("%{keyword}%");
    let rows = sqlx::query(
        "SELECT 'question' AS kind, id, CAST(created_at AS CHAR) AS created FROM question \
         WHERE (title LIKE ? OR body LIKE ?) AND deleted_at IS NULL AND status = 'PUBLIC' \
         UNION ALL \
         SELECT 'answer' AS kind, id, CAST(created_at AS CHAR) AS created FROM answer \
         WHERE body LIKE ? \
         ORDER BY created DESC, id DESC",
    )
    .bind(&pattern)
    .bind(&pattern)
    .bind(&pattern)
    .fetch_all(&app.db().pool)
    .await
    .unwrap();
    rows.iter()
        .map(|row| (row.get::<String, _>(0), json!(row.get::<i64, _>(1))))
        .collect()
}

/// Waits for the mirror, then checks that the tables (by LIKE) and the
/// search both answer exactly `want` for `keyword`. Checking the tables
/// too keeps the hand-written expectation honest.
async fn assert_answers(app: &TestApp, keyword: &str, want: &[HitKey], step: &str) {
    app.wait_indexed().await;
    assert_eq!(like_rows(app, keyword).await, want, "{step}: the tables");
    let body = app.search(keyword, "").await;
    assert_eq!(keys(&body), want, "{step}: the search, {body}");
    assert_eq!(body["total"], want.len(), "{step}: {body}");
}

async fn plain_sql_changes_follow_the_visibility_predicate(store: Store) {
    let app = spawn_app_on_schema(store, qa::schema(store), qa::CONFIG).await;
    app.sql(
        "INSERT INTO question (member_id, title, body, created_at) VALUES \
         (7, '스프링 트랜잭션 질문', '롤백이 안 됩니다', '2025-03-01 10:00:00.000000'), \
         (8, '캐시 질문', '트랜잭션 안에서 캐시를 비워요', '2025-03-02 10:00:00.000000'), \
         (7, 'JPA 질문', '지연 로딩이 궁금해요', '2025-03-03 10:00:00.000000')",
    )
    .await;
    // Deleted before chaja ever saw it: never indexed.
    app.sql(
        "INSERT INTO question (member_id, title, body, created_at, deleted_at) VALUES \
         (9, '지워진 트랜잭션 질문', '본문', '2025-03-04 10:00:00.000000', '2025-03-04 11:00:00.000000')",
    )
    .await;
    app.sql(
        "INSERT INTO answer (question_id, member_id, body, created_at) VALUES \
         (1, 8, '트랜잭션 범위를 줄이세요', '2025-03-01 11:00:00.000000')",
    )
    .await;
    assert_answers(
        &app,
        "트랜잭션",
        &[question(2), answer(1), question(1)],
        "inserted",
    )
    .await;

    // One row gains the keyword, another loses it; the new text is found.
    app.sql("UPDATE question SET body = '트랜잭션 안의 지연 로딩' WHERE id = 3")
        .await;
    app.sql("UPDATE question SET title = '스프링 롤백 질문' WHERE id = 1")
        .await;
    assert_answers(
        &app,
        "트랜잭션",
        &[question(3), question(2), answer(1)],
        "updated",
    )
    .await;
    assert_eq!(keys(&app.search("롤백 질문", "").await), [question(1)]);

    app.sql("UPDATE question SET deleted_at = '2025-03-05 00:00:00.000000' WHERE id = 2")
        .await;
    assert_answers(&app, "트랜잭션", &[question(3), answer(1)], "soft-deleted").await;

    app.sql("UPDATE question SET deleted_at = NULL WHERE id = 2")
        .await;
    assert_answers(
        &app,
        "트랜잭션",
        &[question(3), question(2), answer(1)],
        "un-deleted",
    )
    .await;

    // The second half of the predicate hides a row just as well.
    app.sql("UPDATE question SET status = 'PRIVATE' WHERE id = 3")
        .await;
    assert_answers(&app, "트랜잭션", &[question(2), answer(1)], "made private").await;

    app.sql("DELETE FROM answer WHERE id = 1").await;
    assert_answers(&app, "트랜잭션", &[question(2)], "answer hard-deleted").await;
    app.sql("DELETE FROM question WHERE id = 2").await;
    assert_answers(&app, "트랜잭션", &[], "question hard-deleted").await;

    // Rows nobody touched are still there, unchanged.
    assert_eq!(keys(&app.search("롤백", "").await), [question(1)]);
    assert_eq!(
        app.search("지연 로딩", "").await["total"],
        0,
        "q3 is private"
    );
    app.finish().await;
}

async fn attributes_are_returned_and_filter_across_sources(store: Store) {
    let app = spawn_app_on_schema(store, qa::schema(store), qa::CONFIG).await;
    app.sql(
        "INSERT INTO question (member_id, title, body, created_at) VALUES \
         (7, '배포 질문', '무중단 배포가 궁금해요', '2025-03-01 10:00:00.000000'), \
         (8, '배포 실패', '배포 중에 서버가 죽어요', '2025-03-02 10:00:00.000000')",
    )
    .await;
    app.sql(
        "INSERT INTO answer (question_id, member_id, body, created_at) VALUES \
         (2, 7, '배포 스크립트를 보세요', '2025-03-03 10:00:00.000000'), \
         (1, 9, '배포 로그를 확인하세요', '2025-03-04 10:00:00.000000')",
    )
    .await;
    app.wait_indexed().await;

    let all = app.search("배포", "").await;
    assert_eq!(all["total"], 4, "{all}");

    // Member 7's rows in both sources, newest first, with their attributes.
    let body = app.search("배포", "&attr.member_id=7").await;
    assert_eq!(keys(&body), [answer(1), question(1)], "{body}");
    assert_eq!(body["total"], 2);
    assert_eq!(
        body["totals"],
        json!({"question": 1, "answer": 1}),
        "{body}"
    );
    assert_eq!(
        body["hits"][0]["attributes"],
        json!({"member_id": 7, "question_id": 2})
    );
    assert_eq!(body["hits"][1]["attributes"], json!({"member_id": 7}));
    // With two fields the first is the title; with one there is none.
    assert_eq!(body["hits"][1]["title"], "<em>배포</em> 질문");
    assert_eq!(body["hits"][0]["title"], Value::Null);
    assert_eq!(
        body["hits"][0]["snippet"],
        "<em>배포</em> 스크립트를 보세요"
    );

    // The type filter keeps one source; totals still sum to the total.
    let body = app.search("배포", "&type=answer&attr.member_id=7").await;
    assert_eq!(keys(&body), [answer(1)], "{body}");
    assert_eq!(
        body["totals"],
        json!({"question": 0, "answer": 1}),
        "{body}"
    );
    let body = app.search("배포", "&type=answer").await;
    assert_eq!(keys(&body), [answer(2), answer(1)], "{body}");
    let sum: i64 = all["totals"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_i64().unwrap())
        .sum();
    assert_eq!(sum, 4, "{all}");

    assert_eq!(app.search("배포", "&attr.member_id=999").await["total"], 0);

    // Names the config does not declare are mistakes, not empty answers.
    for (extra, what) in [
        ("&type=review", "the demo's type is not a source here"),
        ("&attr.author_id=7", "an undeclared attribute"),
    ] {
        let path = format!("/api/search?q={}{extra}", crate::helpers::urlencode("배포"));
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
        assert!(body["error"]["code"].is_string(), "{what}: {body}");
        assert!(body["error"]["message"].is_string(), "{what}: {body}");
    }
    app.finish().await;
}

async fn created_at_is_converted_from_each_column_type(store: Store) {
    let (datetime, engine) = match store {
        Store::MySql => ("DATETIME(6)", " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"),
        Store::Sqlite => ("TEXT", ""),
    };
    let id = match store {
        Store::MySql => "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
        Store::Sqlite => "id INTEGER PRIMARY KEY AUTOINCREMENT",
    };
    // Tables of their own, not a fixture: the type of `created_at` is what
    // this test varies.
    let table = |name: &str, created_at: &str| {
        format!("CREATE TABLE {name} ({id}, body TEXT NOT NULL, created_at {created_at} NOT NULL){engine}")
    };
    let schema = [
        table("event_utc", datetime),
        table("event_seoul", datetime),
        // Epoch seconds in an INT, epoch milliseconds in a BIGINT, with no
        // `created_at_unit`: chaja tells them apart itself.
        table("event_seconds", "INT"),
        table("event_millis", "BIGINT"),
    ];
    let source = |name: &str, extra: &str| {
        format!(
            "[[source]]\nname = \"{name}\"\ntable = \"event_{name}\"\nid = \"id\"\n\
             created_at = \"created_at\"\nfields = [\"body\"]\n{extra}\n"
        )
    };
    let config = [
        source("utc", ""),
        source("seoul", "timezone = \"Asia/Seoul\""),
        source("seconds", ""),
        source("millis", ""),
    ]
    .concat();
    let schema: Vec<&str> = schema.iter().map(String::as_str).collect();
    let app = spawn_app_on_schema(store, &schema, &config).await;
    app.sql("INSERT INTO event_utc (body, created_at) VALUES ('시각 기록', '2025-03-01 10:00:00.123456')")
        .await;
    app.sql("INSERT INTO event_seoul (body, created_at) VALUES ('시각 기록', '2025-03-01 10:00:00.123456')")
        .await;
    app.sql("INSERT INTO event_seconds (body, created_at) VALUES ('시각 기록', 1740873600)")
        .await;
    app.sql("INSERT INTO event_millis (body, created_at) VALUES ('시각 기록', 1741005000456)")
        .await;
    app.wait_indexed().await;

    let body = app.search("시각", "").await;
    let times: Vec<(&str, &str)> = body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["type"].as_str().unwrap(),
                h["created_at"].as_str().unwrap(),
            )
        })
        .collect();
    // Newest first by the converted time: Seoul's 10:00 is 01:00 UTC.
    assert_eq!(
        times,
        [
            ("millis", "2025-03-03T12:30:00.456Z"),
            ("seconds", "2025-03-02T00:00:00.000Z"),
            ("utc", "2025-03-01T10:00:00.123Z"),
            ("seoul", "2025-03-01T01:00:00.123Z"),
        ],
        "{body}"
    );
    // A single field is the body: no title.
    assert!(body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["title"].is_null()));
    // Time filters use the converted times too.
    let window = app
        .search("시각", "&from=2025-03-01T05:00:00Z&to=2025-03-02T12:00:00Z")
        .await;
    assert_eq!(
        keys(&window),
        [
            ("seconds".to_owned(), json!(1)),
            ("utc".to_owned(), json!(1))
        ],
        "{window}"
    );
    app.finish().await;
}

async fn a_string_key_is_returned_as_a_string(store: Store) {
    // Not the board's `post` (crate::fixtures::board): a string key is what
    // this test is about.
    let schema: &[&str] = match store {
        Store::MySql => &["CREATE TABLE post (
            id VARCHAR(36) NOT NULL PRIMARY KEY,
            content TEXT NOT NULL,
            created_at DATETIME(6) NOT NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"],
        Store::Sqlite => &["CREATE TABLE post (
            id VARCHAR(36) NOT NULL PRIMARY KEY,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL
        )"],
    };
    let config = r#"
[[source]]
name = "post"
table = "post"
id = "id"
created_at = "created_at"
fields = ["content"]
"#;
    let app = spawn_app_on_schema(store, schema, config).await;
    let uuid = "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f";
    // Looks like a number, but is a string key: it must stay "0042".
    let numeric = "0042";
    app.sql(&format!(
        "INSERT INTO post (id, content, created_at) VALUES \
         ('{uuid}', '게시글 첫 번째', '2025-03-01 10:00:00.000000'), \
         ('{numeric}', '게시글 두 번째', '2025-03-02 10:00:00.000000')"
    ))
    .await;
    app.wait_indexed().await;
    let post = |id: &str| ("post".to_owned(), json!(id));
    let body = app.search("게시글", "").await;
    assert_eq!(keys(&body), [post(numeric), post(uuid)], "{body}");

    app.sql(&format!(
        "UPDATE post SET content = '고친 글' WHERE id = '{uuid}'"
    ))
    .await;
    app.wait_indexed().await;
    assert_eq!(keys(&app.search("게시글", "").await), [post(numeric)]);
    assert_eq!(keys(&app.search("고친", "").await), [post(uuid)]);

    app.sql(&format!("DELETE FROM post WHERE id = '{numeric}'"))
        .await;
    app.wait_indexed().await;
    assert_eq!(app.search("게시글", "").await["total"], 0);
    assert_eq!(keys(&app.search("고친", "").await), [post(uuid)]);
    app.finish().await;
}

/// The parts of a schema chaja may touch: tables, triggers, and the
/// definitions of the user's own tables.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    tables: BTreeSet<String>,
    /// `(trigger, table, event)`.
    triggers: BTreeSet<(String, String, String)>,
    definitions: BTreeMap<String, String>,
}

async fn snapshot(db: &Db, own_tables: &[&str]) -> Snapshot {
    let strings = |rows: Vec<sqlx::any::AnyRow>, n: usize| -> Vec<Vec<String>> {
        rows.iter()
            .map(|row| (0..n).map(|i| row.get::<String, _>(i)).collect())
            .collect()
    };
    let (tables, triggers) = match db.dialect {
        Dialect::MySql => (
            "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE()",
            "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(EVENT_OBJECT_TABLE AS CHAR), \
             CAST(EVENT_MANIPULATION AS CHAR) FROM information_schema.TRIGGERS \
             WHERE TRIGGER_SCHEMA = DATABASE()",
        ),
        Dialect::Sqlite => (
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'",
        ),
    };
    let tables = strings(sqlx::query(tables).fetch_all(&db.pool).await.unwrap(), 1)
        .into_iter()
        .map(|mut r| r.remove(0))
        .collect();
    let triggers = strings(sqlx::query(triggers).fetch_all(&db.pool).await.unwrap(), 3)
        .into_iter()
        .map(|r| {
            let event = match db.dialect {
                Dialect::MySql => r[2].clone(),
                // SQLite keeps the statement only: `… AFTER UPDATE ON t …`.
                Dialect::Sqlite => {
                    let sql = r[2].to_uppercase();
                    let before_on = sql.split(" ON ").next().unwrap_or("").to_owned();
                    ["INSERT", "UPDATE", "DELETE"]
                        .into_iter()
                        .find(|e| before_on.contains(e))
                        .unwrap_or("?")
                        .to_owned()
                }
            };
            (r[0].clone(), r[1].clone(), event)
        })
        .collect();
    let mut definitions = BTreeMap::new();
    for table in own_tables {
        let definition = match db.dialect {
            Dialect::MySql => {
                let row = sqlx::query(&format!("SHOW CREATE TABLE {table}"))
                    .fetch_one(&db.pool)
                    .await
                    .unwrap();
                // The counter moves with every insert, whoever makes it.
                let text: String = row.get(1);
                text.split(' ')
                    .filter(|word| !word.starts_with("AUTO_INCREMENT="))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            Dialect::Sqlite => sqlx::query("SELECT sql FROM sqlite_master WHERE name = ?")
                .bind(*table)
                .fetch_one(&db.pool)
                .await
                .unwrap()
                .get(0),
        };
        definitions.insert((*table).to_owned(), definition);
    }
    Snapshot {
        tables,
        triggers,
        definitions,
    }
}

/// The chaja binary with `args` against `database`, from the database's
/// own directory (so that no `./.env` is read); killed after 60 s.
async fn chaja(database: &Database, args: &[&str], env: &[(&str, String)]) -> std::process::Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_chaja"))
        .args(args)
        .current_dir(database.dir.path())
        .env_remove("CHAJA_CONFIG")
        .env("DATABASE_URL", &database.url)
        .env("CHAJA_INDEX_DIR", database.dir.path().join("index"))
        .env("CHAJA_KO_DIC", "off")
        .env("RUST_LOG", "warn")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap_or_else(|_| panic!("chaja {args:?} ran for more than 60 s"))
        .expect("the chaja binary starts")
}

/// Everything the process wrote, for error messages.
fn said(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_print_changes_nothing_and_uninstall_restores_the_schema() {
    let database = Database::create(Store::MySql).await;
    database.run(qa::schema(Store::MySql)).await;
    let config = database.write_config(qa::CONFIG);
    let config_arg = config.to_str().unwrap();
    let db = Db::connect_lazy(&database.url, 1).unwrap();
    let own = ["question", "answer"];
    let before = snapshot(&db, &own).await;
    assert!(before.triggers.is_empty());

    // --print: the SQL a DBA reviews, and nothing applied.
    let printed = chaja(
        &database,
        &["install", "--config", config_arg, "--print"],
        &[],
    )
    .await;
    assert!(printed.status.success(), "{}", said(&printed));
    let script_text = String::from_utf8_lossy(&printed.stdout).into_owned();
    assert!(script_text.contains("CREATE TRIGGER"), "{script_text}");
    assert!(script_text.contains("search_outbox"), "{script_text}");
    assert_eq!(
        snapshot(&db, &own).await,
        before,
        "--print changed the schema"
    );

    // The printed statements are the library's script, and they run as
    // printed on MariaDB (the text protocol, as a DBA's client sends them).
    let file = chaja_core::sources::ConfigFile::load(&config).unwrap();
    let script = chaja_store::install::script(Dialect::MySql, file.sources.as_ref().unwrap());
    assert!(!script.is_empty());
    for statement in &script {
        assert!(
            script_text.contains(statement.trim()),
            "not printed: {statement}"
        );
        sqlx::raw_sql(statement)
            .execute(&db.pool)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let applied = snapshot(&db, &own).await;
    assert!(applied.tables.contains("search_outbox"), "{applied:?}");
    assert_eq!(
        applied.definitions, before.definitions,
        "a user table changed"
    );
    let uninstalled = chaja(&database, &["uninstall", "--config", config_arg], &[]).await;
    assert!(uninstalled.status.success(), "{}", said(&uninstalled));
    assert_eq!(
        snapshot(&db, &own).await,
        before,
        "uninstall after the printed script"
    );

    // The binary installs the same thing the script does.
    let installed = chaja(&database, &["install", "--config", config_arg], &[]).await;
    assert!(installed.status.success(), "{}", said(&installed));
    let after = snapshot(&db, &own).await;
    assert_eq!(after, applied, "install and the printed script differ");
    // Every change of both tables is caught.
    let events: BTreeSet<(String, String)> = after
        .triggers
        .iter()
        .map(|(_, table, event)| (table.clone(), event.clone()))
        .collect();
    for table in own {
        for event in ["INSERT", "UPDATE", "DELETE"] {
            assert!(
                events.contains(&(table.to_owned(), event.to_owned())),
                "no {event} trigger on {table}: {after:?}"
            );
        }
    }
    assert_eq!(
        after.definitions, before.definitions,
        "a user table changed"
    );
    sqlx::query(
        "INSERT INTO question (member_id, title, body, created_at) \
         VALUES (1, '설치 확인', '본문', '2025-03-01 10:00:00')",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let queued: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM search_outbox")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(queued > 0, "the insert trigger wrote nothing");

    let uninstalled = chaja(&database, &["uninstall", "--config", config_arg], &[]).await;
    assert!(uninstalled.status.success(), "{}", said(&uninstalled));
    assert_eq!(
        snapshot(&db, &own).await,
        before,
        "uninstall left something"
    );
    // The user's rows are the user's: uninstall keeps them.
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM question")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1);
    db.pool.close().await;
    database.finish().await;
}

async fn a_missing_column_installs_nothing_and_names_it(store: Store) {
    let database = Database::create(store).await;
    database.run(qa::schema(store)).await;
    let db = Db::connect_lazy(&database.url, 1).unwrap();
    let own = ["question", "answer"];
    let before = snapshot(&db, &own).await;
    // The first source is fine; the second has a typo in a column, then a
    // table. Nothing at all may be installed, the good source included.
    let good = qa::CONFIG.split("[[source]]").nth(1).unwrap();
    for (bad, names) in [
        (
            "name = \"answer\"\ntable = \"answer\"\nid = \"id\"\ncreated_at = \"created_at\"\n\
             fields = [\"contents\"]\n",
            ["answer", "contents"],
        ),
        (
            "name = \"answer\"\ntable = \"answers\"\nid = \"id\"\ncreated_at = \"created_at\"\n\
             fields = [\"body\"]\n",
            ["answer", "answers"],
        ),
    ] {
        let config = database.write_config(&format!("[[source]]{good}\n[[source]]\n{bad}"));
        let output = chaja(
            &database,
            &["install", "--config", config.to_str().unwrap()],
            &[],
        )
        .await;
        let message = said(&output);
        assert!(!output.status.success(), "installed anyway: {message}");
        for name in names {
            assert!(message.contains(name), "{name:?} not named: {message}");
        }
        assert!(!message.contains("panicked"), "{message}");
        assert_eq!(
            snapshot(&db, &own).await,
            before,
            "half installed: {message}"
        );
    }
    db.pool.close().await;
    database.finish().await;
}

async fn serve_without_install_says_to_run_chaja_install(store: Store) {
    let database = Database::create(store).await;
    database.run(qa::schema(store)).await;
    let config = database.write_config(qa::CONFIG);
    let output = chaja(
        &database,
        &["serve", "--config", config.to_str().unwrap()],
        &[("CHAJA_BIND", format!("127.0.0.1:{}", free_port()))],
    )
    .await;
    let message = said(&output);
    assert!(!output.status.success(), "{message}");
    assert!(message.contains("chaja install"), "{message}");
    database.finish().await;
}

async fn a_config_with_sources_serves_no_demo_tables_or_routes(store: Store) {
    let app = spawn_app_on_schema(store, qa::schema(store), qa::CONFIG).await;
    let (status, _) = app
        .post(
            "/api/questions",
            json!({ "author_id": 1, "title": "데모", "content": "데모" }),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.post("/api/users", json!({ "name": "데모" })).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let tables = snapshot(app.db(), &[]).await.tables;
    for demo in ["questions", "reviews", "users", "comments"] {
        assert!(
            !tables.contains(demo),
            "demo table {demo} created: {tables:?}"
        );
    }
    // Search itself is served.
    assert_eq!(app.search("데모", "").await["total"], 0);
    app.finish().await;
}

/// A rebuild reads every source (with its filter), and `verify` compares
/// content: a plain UPDATE the triggers never saw is stale, though no
/// `updated_at` moved, and `--repair` brings it back through the outbox.
async fn reindex_and_verify_work_per_source(store: Store) {
    let app = spawn_app_on_schema(store, qa::schema(store), qa::CONFIG).await;
    app.sql(
        "INSERT INTO question (member_id, title, body, created_at, deleted_at) VALUES \
         (7, '인덱스 질문', '재색인 본문', '2025-03-01 10:00:00.000000', NULL), \
         (8, '숨은 질문', '재색인 숨김', '2025-03-02 10:00:00.000000', '2025-03-03 00:00:00.000000')",
    )
    .await;
    app.sql(
        "INSERT INTO answer (question_id, member_id, body, created_at) VALUES \
         (1, 9, '재색인 답변', '2025-03-04 10:00:00.000000')",
    )
    .await;
    app.wait_indexed().await;
    let sources = app.state.search.index.sources().clone();
    let old = app.state.search.index.live().id;
    let rebuilt = chaja_mirror::reindex::reindex(
        app.db(),
        &sources,
        &app.index_dir(),
        crate::helpers::REBUILD,
        false,
    )
    .await
    .unwrap();
    // One visible question and one answer; the soft-deleted row is not read.
    assert_eq!(rebuilt.docs, 2, "{rebuilt:?}");
    wait_until(
        Duration::from_secs(20),
        "the rebuild was not swapped in",
        || async { app.state.search.index.live().id != old },
    )
    .await;
    assert_eq!(
        keys(&app.search("재색인", "").await),
        [answer(1), question(1)]
    );

    let report = chaja_mirror::verify::verify(app.db(), &sources, app.state.search.index.live())
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.rows_in_db["question"], 1);
    assert_eq!(report.rows_in_db["answer"], 1);

    // Another program changes a row while the trigger is gone.
    app.sql("DROP TRIGGER chaja_answer_update").await;
    app.sql("UPDATE answer SET body = '바뀐 답변' WHERE id = 1")
        .await;
    let report = chaja_mirror::verify::verify(app.db(), &sources, app.state.search.index.live())
        .await
        .unwrap();
    assert_eq!(
        (report.stale, report.missing, report.extra),
        (1, 0, 0),
        "{report:?}"
    );
    assert_eq!(report.drift[0].source, "answer");
    assert_eq!(report.drift[0].id, "1");
    chaja_mirror::verify::repair(app.db(), &report.drift)
        .await
        .unwrap();
    app.wait_indexed().await;
    assert_eq!(keys(&app.search("바뀐 답변", "").await), [answer(1)]);
    assert_eq!(keys(&app.search("재색인", "").await), [question(1)]);
    assert!(
        chaja_mirror::verify::verify(app.db(), &sources, app.state.search.index.live())
            .await
            .unwrap()
            .is_clean()
    );
    app.finish().await;
}

/// An UPDATE of the key itself: the row now lives under the new key, and
/// the old key must leave the index (the update trigger records both).
async fn a_changed_key_leaves_the_old_one_behind(store: Store) {
    let app = spawn_app_on_schema(store, qa::schema(store), qa::CONFIG).await;
    app.sql(
        "INSERT INTO question (member_id, title, body, created_at) VALUES \
         (7, '키 변경', '본문', '2025-03-01 10:00:00.000000')",
    )
    .await;
    app.wait_indexed().await;
    assert_eq!(keys(&app.search("키 변경", "").await), [question(1)]);
    app.sql("UPDATE question SET id = 40 WHERE id = 1").await;
    app.wait_indexed().await;
    assert_eq!(keys(&app.search("키 변경", "").await), [question(40)]);
    app.finish().await;
}

/// A database user without the TRIGGER privilege, as many application
/// accounts are: `install` names the privilege and the way out, and leaves
/// nothing behind, neither triggers nor chaja's tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_trigger_privilege_is_named_and_installs_nothing() {
    let database = Database::create(Store::MySql).await;
    database.run(qa::schema(Store::MySql)).await;
    let db = Db::connect_lazy(&database.url, 1).unwrap();
    let own = ["question", "answer"];
    let before = snapshot(&db, &own).await;
    let name: String = sqlx::query_scalar("SELECT DATABASE()")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let user = format!("app_{:08x}", rand::random::<u32>());
    for sql in [
        format!("CREATE USER '{user}'@'%' IDENTIFIED BY 'app'"),
        format!("CREATE USER '{user}'@'localhost' IDENTIFIED BY 'app'"),
        format!("CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'app'"),
    ] {
        sqlx::raw_sql(&sql).execute(&db.pool).await.unwrap();
    }
    for host in ["%", "localhost", "127.0.0.1"] {
        sqlx::raw_sql(&format!(
            "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON `{name}`.* TO '{user}'@'{host}'"
        ))
        .execute(&db.pool)
        .await
        .expect("the test user may grant (.ci/run gives it GRANT OPTION)");
    }
    let (_, address) = database.url.rsplit_once('@').unwrap();
    let url = format!("mysql://{user}:app@{address}");
    let config = database.write_config(qa::CONFIG);
    let output = chaja(
        &database,
        &["install", "--config", config.to_str().unwrap()],
        &[("DATABASE_URL", url.clone())],
    )
    .await;
    let message = said(&output);
    assert!(!output.status.success(), "installed anyway: {message}");
    assert!(
        message.contains("TRIGGER privilege") && message.contains("--print"),
        "{message}"
    );
    assert!(
        message.contains("question"),
        "the source is named: {message}"
    );
    assert_eq!(
        snapshot(&db, &own).await,
        before,
        "half installed: {message}"
    );

    // A DBA installs; chaja then runs as the application user, which
    // cannot see triggers at all, and trusts the install record.
    let file = chaja_core::sources::ConfigFile::load(&config).unwrap();
    chaja_store::install::install(&db, file.sources.as_ref().unwrap())
        .await
        .unwrap();
    let output = chaja(
        &database,
        &["verify", "--config", config.to_str().unwrap()],
        &[("DATABASE_URL", url.clone())],
    )
    .await;
    assert!(output.status.success(), "{}", said(&output));
    for host in ["%", "localhost", "127.0.0.1"] {
        sqlx::raw_sql(&format!("DROP USER '{user}'@'{host}'"))
            .execute(&db.pool)
            .await
            .unwrap();
    }
    db.pool.close().await;
    database.finish().await;
}

/// With a binary log on, creating a trigger takes SUPER or
/// `log_bin_trust_function_creators` (MySQL 8's rule, and MariaDB's): an
/// application user with every table privilege, TRIGGER included, is
/// refused, and the message says which setting lets it through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_log_rule_for_triggers_is_explained() {
    let server = crate::helpers::PrivateMariaDb::with_binary_log().await;
    let root = server.url();
    for sql in [
        "CREATE DATABASE site CHARACTER SET utf8mb4".to_owned(),
        "CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'".to_owned(),
        "GRANT ALL PRIVILEGES ON site.* TO 'app'@'127.0.0.1'".to_owned(),
    ] {
        server.admin(&sql).await;
    }
    let site = root.replace("/test", "/site");
    let db = Db::connect_lazy(&site, 1).unwrap();
    for statement in qa::schema(Store::MySql) {
        sqlx::query(statement).execute(&db.pool).await.unwrap();
    }
    let database = Database::create(Store::Sqlite).await; // a directory and a config file
    let config = database.write_config(qa::CONFIG);
    let app_url = site.replace("mysql://root@", "mysql://app:app@");
    let args = ["install", "--config", config.to_str().unwrap()];
    let env = [("DATABASE_URL", app_url)];
    let output = chaja(&database, &args, &env).await;
    let message = said(&output);
    assert!(!output.status.success(), "installed anyway: {message}");
    assert!(
        message.contains("log_bin_trust_function_creators"),
        "{message}"
    );
    let triggers: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'site'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(triggers, 0, "half installed: {message}");

    // What the message says to do lets it through.
    server
        .admin("SET GLOBAL log_bin_trust_function_creators = 1")
        .await;
    let output = chaja(&database, &args, &env).await;
    assert!(output.status.success(), "{}", said(&output));
    let triggers: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'site'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(triggers, 6);
    db.pool.close().await;
    database.finish().await;
}

/// A string key changed in case only: equal under MySQL's default
/// case-insensitive collation, a different key to chaja. The update
/// trigger compares bytes, so the old key leaves the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_changed_in_case_only_leaves_the_old_one() {
    // A table of its own: a string key under MySQL's case-insensitive
    // collation is what this test is about.
    let schema = ["CREATE TABLE tag (
        code VARCHAR(40) NOT NULL PRIMARY KEY,
        body TEXT NOT NULL,
        created_at DATETIME(6) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"];
    let config = "[[source]]\nname = \"tag\"\ntable = \"tag\"\nid = \"code\"\n\
                  created_at = \"created_at\"\nfields = [\"body\"]\n";
    let app = spawn_app_on_schema(Store::MySql, &schema, config).await;
    app.sql("INSERT INTO tag VALUES ('rust', '러스트 태그', '2025-03-01 10:00:00')")
        .await;
    app.wait_indexed().await;
    let ids = |body: Value| -> Vec<Value> {
        body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].clone())
            .collect()
    };
    assert_eq!(ids(app.search("러스트", "").await), [json!("rust")]);
    app.sql("UPDATE tag SET code = 'RUST' WHERE code = 'rust'")
        .await;
    app.wait_indexed().await;
    assert_eq!(ids(app.search("러스트", "").await), [json!("RUST")]);
    app.sql("DELETE FROM tag").await;
    app.wait_indexed().await;
    assert_eq!(app.search("러스트", "").await["total"], 0);
    app.finish().await;
}

/// A trigger that is gone (a migration tool recreated the table, someone
/// dropped it) stops chaja, though `search_installed` still records the
/// install: the record stands in only for triggers this user cannot see.
async fn a_dropped_trigger_is_not_hidden_by_the_install_record(store: Store) {
    let database = Database::create(store).await;
    database.run(qa::schema(store)).await;
    let config = database.write_config(qa::CONFIG);
    let db = Db::connect_lazy(&database.url, 1).unwrap();
    let file = chaja_core::sources::ConfigFile::load(&config).unwrap();
    chaja_store::install::install(&db, file.sources.as_ref().unwrap())
        .await
        .unwrap();
    let verify = ["verify", "--config", config.to_str().unwrap()];
    let output = chaja(&database, &verify, &[]).await;
    assert!(output.status.success(), "{}", said(&output));
    sqlx::raw_sql("DROP TRIGGER chaja_answer_update")
        .execute(&db.pool)
        .await
        .unwrap();
    let output = chaja(&database, &verify, &[]).await;
    let message = said(&output);
    assert!(!output.status.success(), "ran without a trigger: {message}");
    assert!(
        message.contains("chaja_answer_update") && message.contains("chaja install"),
        "{message}"
    );
    db.pool.close().await;
    database.finish().await;
}
