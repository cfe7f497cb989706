//! Preflight against real MariaDB servers, well and badly configured.

mod support;

use std::time::Duration;

use chaja_binlog::{
    current_position, preflight, KeepAll, PreflightSettings, Reader, Status, TableName,
};
use support::{settings, MariaDb};

fn checks_for(server_id: u32) -> PreflightSettings {
    PreflightSettings {
        tables: vec![TableName::new("test", "q")],
        min_retention: Duration::from_secs(86_400),
        server_id,
    }
}

/// A user with exactly the grants the reader documents.
async fn reader_user(server: &MariaDb) -> String {
    server
        .sql(&[
            "CREATE USER 'chaja'@'%'",
            "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'chaja'@'%'",
            "GRANT SELECT ON test.* TO 'chaja'@'%'",
        ])
        .await;
    server.url_as("chaja")
}

#[tokio::test]
async fn a_well_configured_server_passes() {
    let server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    let url = reader_user(&server).await;
    let report = preflight(&url, &checks_for(1_000_001)).await.unwrap();
    println!("{report}");
    assert!(report.passed(), "{report}");
    // The reader's own grants cannot list the replicas (that takes
    // REPLICATION MASTER ADMIN): a warning naming the grant, not a failure.
    let id = report.get("reader server_id").unwrap();
    assert_eq!(id.status, Status::Warn, "{report}");
    assert_eq!(
        id.fix.as_deref(),
        Some("GRANT REPLICATION MASTER ADMIN ON *.* TO 'chaja'@'%';")
    );
    for name in [
        "log_bin",
        "binlog_format",
        "binlog_row_image",
        "binlog_row_metadata",
        "binlog retention",
    ] {
        assert_eq!(report.get(name).unwrap().status, Status::Pass, "{report}");
    }
}

#[tokio::test]
async fn a_server_with_minimal_metadata_is_told_the_statement_that_fixes_it() {
    let server = MariaDb::start_with(
        1,
        &[
            "--log-bin",
            "--log-basename=binlog",
            "--binlog-format=MIXED",
            "--binlog-row-metadata=MINIMAL",
            "--binlog-expire-logs-seconds=3600",
        ],
    )
    .await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    let report = preflight(&server.url(), &checks_for(1_000_001))
        .await
        .unwrap();
    println!("{report}");
    assert!(!report.passed(), "{report}");

    let metadata = report.get("binlog_row_metadata").unwrap();
    assert_eq!(metadata.status, Status::Fail);
    assert_eq!(metadata.found, "MINIMAL");
    assert_eq!(
        metadata.fix.as_deref(),
        Some("SET GLOBAL binlog_row_metadata = FULL;\nmy.cnf [mysqld]: binlog_row_metadata = FULL")
    );
    assert_eq!(report.get("binlog_format").unwrap().status, Status::Fail);
    let retention = report.get("binlog retention").unwrap();
    assert_eq!(retention.status, Status::Fail, "{report}");
    assert!(retention
        .fix
        .as_deref()
        .unwrap()
        .starts_with("SET GLOBAL binlog_expire_logs_seconds = 86400;"));

    // The fix works: after it the same checks pass.
    server
        .sql(&[
            "SET GLOBAL binlog_row_metadata = FULL",
            "SET GLOBAL binlog_format = ROW",
            "SET GLOBAL binlog_expire_logs_seconds = 86400",
        ])
        .await;
    let report = preflight(&server.url(), &checks_for(1_000_001))
        .await
        .unwrap();
    assert!(report.passed(), "{report}");
}

#[tokio::test]
async fn missing_grants_and_tables_are_named() {
    let server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    server.sql(&["CREATE USER 'bare'@'%'"]).await;
    let mut checks = checks_for(1_000_001);
    checks.tables.push(TableName::new("test", "missing"));
    // The URL's database is itself a grant the user lacks.
    let report = preflight(&server.url_as("bare"), &checks).await.unwrap();
    let connect = report.get("connect").unwrap();
    assert_eq!(connect.status, Status::Fail, "{report}");
    assert_eq!(
        connect.fix.as_deref(),
        Some("GRANT SELECT ON `test`.* TO 'bare'@'%';")
    );
    // Without a database in the URL, each grant is named.
    let url = format!("mysql://bare@127.0.0.1:{}", server.port);
    let report = preflight(&url, &checks).await.unwrap();
    assert!(!report.passed(), "{report}");
    let slave = report.get("grant REPLICATION SLAVE").unwrap();
    assert_eq!(slave.status, Status::Fail);
    assert_eq!(
        slave.fix.as_deref(),
        Some("GRANT REPLICATION SLAVE ON *.* TO 'bare'@'%';")
    );
    assert_eq!(
        report.get("grant BINLOG MONITOR").unwrap().status,
        Status::Fail
    );
    let select = report.get("SELECT on test.q").unwrap();
    assert_eq!(select.status, Status::Fail);
    assert_eq!(
        select.fix.as_deref(),
        Some("GRANT SELECT ON `test`.* TO 'bare'@'%';")
    );
    // As root: the missing table is named as missing.
    let report = preflight(&server.url(), &checks).await.unwrap();
    assert_eq!(
        report.get("SELECT on test.missing").unwrap().status,
        Status::Fail
    );
    assert_eq!(report.get("SELECT on test.q").unwrap().status, Status::Pass);
}

#[tokio::test]
async fn a_server_id_in_use_fails_and_a_free_one_passes() {
    let server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    // The server's own id.
    let report = preflight(&server.url(), &checks_for(1)).await.unwrap();
    assert_eq!(
        report.get("reader server_id").unwrap().status,
        Status::Fail,
        "{report}"
    );
    // A reader registered with an id: another with the same id fails.
    let start = current_position(&server.url()).await.unwrap();
    let reader = Reader::start(settings(&server, &["q"]), start, KeepAll)
        .await
        .unwrap();
    let registered = settings(&server, &["q"]).server_id;
    let report = preflight(&server.url(), &checks_for(registered))
        .await
        .unwrap();
    assert_eq!(
        report.get("reader server_id").unwrap().status,
        Status::Fail,
        "{report}"
    );
    let report = preflight(&server.url(), &checks_for(registered + 1))
        .await
        .unwrap();
    assert_eq!(
        report.get("reader server_id").unwrap().status,
        Status::Pass,
        "{report}"
    );
    reader.close().await;
}
