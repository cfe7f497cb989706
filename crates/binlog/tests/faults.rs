//! The reader's faults against a real MariaDB: each is named, none is
//! skipped over.

mod support;

use std::time::Duration;

use chaja_binlog::{
    current_position, Backoff, Error, KeepAll, Position, Reader, RowChange, Transaction,
};
use support::{drain, next_transaction, settings, MariaDb, BINLOG};

fn inserted_ids(transactions: &[Transaction<(usize, RowChange)>]) -> Vec<i64> {
    let mut ids = Vec::new();
    for transaction in transactions {
        for (_, change) in &transaction.changes {
            ids.push(
                change
                    .after
                    .as_ref()
                    .unwrap()
                    .get("id")
                    .unwrap()
                    .as_i64()
                    .unwrap(),
            );
        }
    }
    ids
}

/// The first error of a reader started at `from`: at start, or at its
/// first event.
async fn first_error(settings: chaja_binlog::Settings, from: Position) -> Error {
    let mut reader = match Reader::start(settings, from, KeepAll).await {
        Ok(reader) => reader,
        Err(error) => return error,
    };
    loop {
        match tokio::time::timeout(Duration::from_secs(20), reader.next()).await {
            // A reader that started elsewhere would sit idle: heartbeats
            // until the timeout below fails the test.
            Ok(Ok(chaja_binlog::Event::Heartbeat(_))) => continue,
            Ok(Ok(event)) => panic!("expected an error, got {event:?}"),
            Ok(Err(error)) => return error,
            Err(_) => panic!("no error within 20 s"),
        }
    }
}

#[tokio::test]
async fn a_server_restart_mid_stream_reconnects_and_continues() {
    let mut server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    let start = current_position(&server.url()).await.unwrap();
    let mut reader = Reader::start(settings(&server, &["q"]), start, KeepAll)
        .await
        .unwrap();
    server
        .sql(&[
            "INSERT INTO test.q VALUES (1)",
            "INSERT INTO test.q VALUES (2)",
        ])
        .await;
    assert_eq!(inserted_ids(&drain(&mut reader).await), vec![1, 2]);

    // A crash, then the server back on the same data and port.
    server.kill();
    let restart = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.run().await;
        server
            .sql(&[
                "INSERT INTO test.q VALUES (3)",
                "INSERT INTO test.q VALUES (4)",
            ])
            .await;
    };
    let read = async {
        let mut transactions = Vec::new();
        while transactions.len() < 2 {
            transactions.push(next_transaction(&mut reader).await);
        }
        transactions
    };
    let ((), transactions) = tokio::join!(restart, read);
    assert_eq!(
        inserted_ids(&transactions),
        vec![3, 4],
        "none twice, none lost"
    );
    assert_eq!(
        reader.position(),
        &current_position(&server.url()).await.unwrap()
    );
}

#[tokio::test]
async fn a_reader_gives_up_when_told_to() {
    let mut server = MariaDb::start().await;
    let start = current_position(&server.url()).await.unwrap();
    let mut settings = settings(&server, &["q"]);
    settings.backoff = Backoff {
        first: Duration::from_millis(50),
        max: Duration::from_millis(200),
        give_up_after: Some(Duration::from_secs(2)),
    };
    let mut reader = Reader::start(settings, start, KeepAll).await.unwrap();
    server.kill();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), reader.next())
            .await
            .unwrap()
        {
            Ok(_) => continue,
            Err(Error::GaveUp { .. }) => break,
            Err(other) => panic!("{other}"),
        }
    }
}

/// Inserts, rotates twice and purges every file but the newest.
async fn purge_all_but_the_newest(server: &MariaDb) {
    server
        .sql(&[
            "INSERT INTO test.q VALUES (1)",
            "FLUSH BINARY LOGS",
            "INSERT INTO test.q VALUES (2)",
            "FLUSH BINARY LOGS",
        ])
        .await;
    let (newest, _) = server.master_status().await;
    server
        .sql(&[&format!("PURGE BINARY LOGS TO '{newest}'")])
        .await;
}

#[tokio::test]
async fn a_gtid_position_purged_from_the_server_is_purged() {
    let server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    let stored = current_position(&server.url()).await.unwrap();
    purge_all_but_the_newest(&server).await;
    let error = first_error(settings(&server, &["q"]), stored).await;
    assert!(matches!(error, Error::Purged { .. }), "{error}");
}

#[tokio::test]
async fn a_file_position_purged_from_the_server_is_purged() {
    let server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    let (file, offset) = server.master_status().await;
    let stored: Position = format!("file:server_id=1:{file}:{offset}").parse().unwrap();
    purge_all_but_the_newest(&server).await;
    let error = first_error(settings(&server, &["q"]), stored).await;
    assert!(matches!(error, Error::Purged { .. }), "{error}");
}

#[tokio::test]
async fn a_file_position_of_another_server_is_refused() {
    let first = MariaDb::start().await;
    let second = MariaDb::start_with(2, &BINLOG).await;
    let (file, offset) = first.master_status().await;
    let stored: Position = format!("file:server_id=1:{file}:{offset}").parse().unwrap();
    // The same file name exists on the second server: only the identity
    // tells the positions apart.
    assert_eq!(second.master_status().await.0, file);
    let error = first_error(settings(&second, &["q"]), stored).await;
    match error {
        Error::OtherServer { saved, actual, .. } => {
            assert_eq!(saved.to_string(), "server_id=1");
            assert_eq!(actual.to_string(), "server_id=2");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_gtid_position_the_server_never_had_is_refused() {
    let server = MariaDb::start().await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    // Ahead of the server in its own domain: another topology's, or a
    // server restored from an older backup.
    let stored: Position = "mariadb-gtid:server_id=1:0-1-1000".parse().unwrap();
    let error = first_error(settings(&server, &["q"]), stored).await;
    assert!(matches!(error, Error::NotInLog { .. }), "{error}");
}

#[tokio::test]
async fn a_log_without_column_names_is_an_error_naming_the_setting() {
    let server = MariaDb::start_with(
        1,
        &[
            "--log-bin",
            "--log-basename=binlog",
            "--binlog-format=ROW",
            "--binlog-row-metadata=MINIMAL",
        ],
    )
    .await;
    server
        .sql(&["CREATE TABLE test.q (id INT PRIMARY KEY)"])
        .await;
    let start = current_position(&server.url()).await.unwrap();
    let mut reader = Reader::start(settings(&server, &["q"]), start, KeepAll)
        .await
        .unwrap();
    server.sql(&["INSERT INTO test.q VALUES (1)"]).await;
    let error = loop {
        match tokio::time::timeout(Duration::from_secs(20), reader.next())
            .await
            .unwrap()
        {
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    assert!(matches!(error, Error::NoColumnNames { .. }), "{error}");
    assert!(
        error.to_string().contains("binlog_row_metadata = FULL"),
        "{error}"
    );
}

#[tokio::test]
async fn a_user_without_replication_slave_is_told_the_grant() {
    let server = MariaDb::start().await;
    server
        .sql(&[
            "CREATE USER 'plain'@'%'",
            "GRANT SELECT ON test.* TO 'plain'@'%'",
        ])
        .await;
    let start = current_position(&server.url()).await.unwrap();
    let mut settings = settings(&server, &["q"]);
    settings.url = server.url_as("plain");
    let error = first_error(settings, start).await;
    match error {
        Error::Privilege { grant, .. } => assert_eq!(grant, "REPLICATION SLAVE"),
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_server_without_a_binary_log_is_refused() {
    let server = MariaDb::start_with(1, &["--skip-log-bin"]).await;
    let error = current_position(&server.url()).await.unwrap_err();
    assert!(matches!(error, Error::NoBinaryLog), "{error}");
}
