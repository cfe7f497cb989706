//! `chaja loadtest --scenario counters`: a counter storm on any table.
//!
//! A board's page view runs `UPDATE t SET view_count = view_count + 1
//! WHERE id = ?`. This drives that with plain SQL on the site's own table,
//! `--rate` updates a second spread over its rows, and meanwhile measures
//! what it costs the mirror:
//!
//! - the outbox rows written during the storm (0 when the column is one
//!   chaja does not read);
//! - the time to searchable: once a second a probe row goes into the
//!   outbox (`op = 'probe'`, which the indexer applies as nothing), and
//!   the time until the server's `/readyz` reports it applied is how long
//!   a post written at that moment would wait;
//! - how far behind the server's indexer fell (`seconds_behind`).
//!
//! It needs the database (`--database-url`) and the server (`--host`).

use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use serde::Serialize;
use serde_json::Value;

use chaja_store::{Db, Dialect};

/// What the storm hits.
#[derive(Debug, Clone)]
pub struct CountersConfig {
    pub database_url: String,
    /// A plain SQL name (checked).
    pub table: String,
    /// The counter column (checked).
    pub column: String,
    /// Updates per second.
    pub rate: u32,
}

/// What a storm cost.
#[derive(Debug, Clone, Serialize)]
pub struct CountersSummary {
    pub table: String,
    pub column: String,
    pub duration_s: f64,
    pub executed: u64,
    pub errors: u64,
    pub tps: f64,
    /// Outbox rows written while the storm ran (probes not counted).
    pub outbox_rows: i64,
    /// Probe to applied, in milliseconds: p50, p99, max.
    pub searchable_ms: Vec<(String, f64)>,
    pub probes: usize,
    /// The most `/readyz` said the indexer was behind, in seconds.
    pub max_seconds_behind: f64,
}

impl std::fmt::Display for CountersSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "TPS {:.1}, executed {}, errors {} ({} updates of {}.{} in {:.0} s)",
            self.tps,
            self.executed,
            self.errors,
            self.executed,
            self.table,
            self.column,
            self.duration_s
        )?;
        writeln!(
            f,
            "outbox rows written during the storm: {}",
            self.outbox_rows
        )?;
        let lag: Vec<String> = self
            .searchable_ms
            .iter()
            .map(|(name, ms)| format!("{name} {ms:.0} ms"))
            .collect();
        writeln!(
            f,
            "time to searchable ({} probes): {}",
            self.probes,
            lag.join(", ")
        )?;
        writeln!(
            f,
            "indexer behind at most: {:.1} s",
            self.max_seconds_behind
        )
    }
}

fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// The table's primary key column, and up to 10,000 of its values.
async fn keys(db: &Db, table: &str) -> anyhow::Result<(String, Vec<String>)> {
    let sql = match db.dialect {
        Dialect::MySql => format!(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{table}' AND CONSTRAINT_NAME = 'PRIMARY' \
             ORDER BY ORDINAL_POSITION LIMIT 1"
        ),
        Dialect::Sqlite => {
            format!("SELECT name FROM pragma_table_info('{table}') WHERE pk = 1 LIMIT 1")
        }
    };
    let row = sqlx::query(&sql).fetch_optional(&db.pool).await?;
    let Some(row) = row else {
        anyhow::bail!("table {table} has no primary key to spread the updates over");
    };
    let key = chaja_store::text(&row, 0)?;
    let sql = format!("SELECT CAST(`{key}` AS CHAR) FROM `{table}` LIMIT 10000");
    let mut values = Vec::new();
    for row in sqlx::query(&sql).fetch_all(&db.pool).await? {
        values.push(chaja_store::text(&row, 0)?);
    }
    anyhow::ensure!(!values.is_empty(), "table {table} has no rows to update");
    Ok((key, values))
}

async fn max_seq(db: &Db) -> anyhow::Result<i64> {
    Ok(chaja_store::outbox::max_seq(db).await?)
}

/// The server's applied position and how far behind it is.
async fn readiness(client: &reqwest::Client, host: &str) -> Option<(i64, f64)> {
    let body: Value = client
        .get(format!("{host}/readyz"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    let applied = body["indexer"]["applied_seq"].as_i64()?;
    let behind = body["indexer"]["seconds_behind"].as_f64().unwrap_or(0.0);
    Some((applied, behind))
}

/// Runs the storm for `run_time` seconds against `host`'s database.
pub async fn run(
    host: &str,
    config: &CountersConfig,
    run_time: Duration,
) -> anyhow::Result<CountersSummary> {
    anyhow::ensure!(
        plain_name(&config.table) && plain_name(&config.column),
        "--table and --column must be plain SQL names"
    );
    anyhow::ensure!(
        (1..=100_000).contains(&config.rate),
        "--rate must be between 1 and 100000"
    );
    let host = host.trim_end_matches('/').to_owned();
    let db = Db::connect_lazy(&config.database_url, 8)?;
    let (key, values) = keys(&db, &config.table).await?;
    let client = reqwest::Client::new();
    anyhow::ensure!(
        readiness(&client, &host).await.is_some(),
        "no chaja answers /readyz at {host}"
    );
    let update = format!(
        "UPDATE `{}` SET `{c}` = `{c}` + 1 WHERE `{key}` = ?",
        config.table,
        c = config.column
    );
    let before = max_seq(&db).await?;
    let started = Instant::now();
    let deadline = started + run_time;

    // The storm: a tick every 1/rate s, each update on a pooled
    // connection, at most 64 in flight.
    let storm = {
        let (db, update) = (db.clone(), update.clone());
        let period = Duration::from_secs_f64(1.0 / f64::from(config.rate));
        tokio::spawn(async move {
            let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let (mut executed, errors) = (
                0u64,
                std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
            );
            let mut tasks = tokio::task::JoinSet::new();
            while Instant::now() < deadline {
                ticker.tick().await;
                let value = values
                    .choose(&mut rand::rng())
                    .expect("rows were found")
                    .clone();
                let permit = limit.clone().acquire_owned().await.expect("never closed");
                let (db, update, errors) = (db.clone(), update.clone(), errors.clone());
                tasks.spawn(async move {
                    let _permit = permit;
                    if sqlx::query(&update)
                        .bind(value)
                        .execute(&db.pool)
                        .await
                        .is_err()
                    {
                        errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
                executed += 1;
                while tasks.try_join_next().is_some() {}
            }
            while tasks.join_next().await.is_some() {}
            (executed, errors.load(std::sync::atomic::Ordering::Relaxed))
        })
    };

    // Probes, once a second, each waited for until applied.
    let mut searchable = Vec::new();
    let mut max_behind: f64 = 0.0;
    let mut probes_written = 0i64;
    while Instant::now() < deadline {
        let tick = Instant::now();
        sqlx::query("INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('probe', NULL, 'probe')")
            .execute(&db.pool)
            .await?;
        probes_written += 1;
        let seq = max_seq(&db).await?;
        let written = Instant::now();
        loop {
            if let Some((applied, behind)) = readiness(&client, &host).await {
                max_behind = max_behind.max(behind);
                if applied >= seq {
                    searchable.push(written.elapsed().as_secs_f64() * 1000.0);
                    break;
                }
            }
            if written.elapsed() > Duration::from_secs(60) {
                anyhow::bail!("a probe was not applied within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if let Some(rest) = Duration::from_secs(1).checked_sub(tick.elapsed()) {
            tokio::time::sleep(rest).await;
        }
    }
    let (executed, errors) = storm.await?;
    let duration = started.elapsed().as_secs_f64();
    let after: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS SIGNED) FROM search_outbox WHERE seq > ? AND op <> 'probe'",
    )
    .bind(before)
    .fetch_one(&db.pool)
    .await?;
    searchable.sort_by(f64::total_cmp);
    let at = |p: f64| {
        searchable
            .get(((searchable.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0)
    };
    debug_assert_eq!(probes_written as usize, searchable.len());
    Ok(CountersSummary {
        table: config.table.clone(),
        column: config.column.clone(),
        duration_s: duration,
        executed,
        errors,
        tps: executed as f64 / duration,
        outbox_rows: after,
        probes: searchable.len(),
        searchable_ms: vec![
            ("p50".to_owned(), at(0.5)),
            ("p99".to_owned(), at(0.99)),
            ("max".to_owned(), searchable.last().copied().unwrap_or(0.0)),
        ],
        max_seconds_behind: max_behind,
    })
}
