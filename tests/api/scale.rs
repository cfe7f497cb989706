//! Scale-out on real parts: a Redis Cluster under the cache, trending and
//! the recompute locks; MariaDB read replicas; replicas behind HAProxy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::{
    free_port, spawn_app, spawn_app_with, wait_until, PrivateMariaDb, RedisCluster, Server, Store,
    TestApp,
};

async fn trending(app: &TestApp) -> (u16, Value) {
    let (status, body) = app.get("/api/search/trending?window=1h").await;
    (status.as_u16(), body)
}

fn keywords(body: &Value) -> Vec<String> {
    body["keywords"]
        .as_array()
        .map(|k| {
            k.iter()
                .map(|k| k["keyword"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// On a 3-master cluster (each with a replica): a cached answer written by
/// one server is read by another, trending counts across slots' worth of
/// keys in one script, and when the master holding trending is killed,
/// searches never fail and trending answers again within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_carries_the_cache_and_trending_through_a_failover() {
    let mut cluster = RedisCluster::start(3, 1);
    let url = cluster.url();
    let app = Arc::new(
        spawn_app_with(Store::Sqlite, |args| {
            args.cache.redis_url = Some(url);
            // Answers from the other server count as fresh for a minute.
            args.cache.max_stale = std::time::Duration::from_millis(60_000);
            // The cluster client refreshes its slot map within a call.
            args.cache.redis_timeout = std::time::Duration::from_millis(250);
        })
        .await,
    );
    let user = app.create_user("u").await;
    app.create_question(user, "클러스터 질문", "레디스 클러스터 본문")
        .await;
    app.wait_indexed().await;

    // Asked twice, the answer goes to Redis; a second server reads it.
    app.search("클러스터", "").await;
    app.search("클러스터", "").await;
    let other = app.spawn_replica().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = other.search("클러스터", "").await;
        if body["cache"]["hit"] == true {
            assert_eq!(body["total"], 1);
            break;
        }
        assert!(Instant::now() < deadline, "no L2 hit from the cluster");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Trending: the record and top scripts run on the cluster.
    app.search("레디스", "").await;
    app.state.search.trending.flush().await;
    let (status, body) = trending(&app).await;
    assert_eq!(status, 200, "{body}");
    let mut found = keywords(&body);
    found.sort();
    assert_eq!(found, ["레디스", "클러스터"]);

    // Kill the master that holds trending's slot, under search load.
    let tag = format!("{{{}:trend}}", app.args.cache.cache_prefix);
    let master = cluster.master_of(&tag);
    cluster.wait_ok();
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (app, stop) = (app.clone(), stop.clone());
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                // A new key each time: every search asks Redis.
                let (status, _) = app
                    .get(&format!("/api/search?q=클러스터&attr.author_id={n}"))
                    .await;
                statuses.push(status.as_u16());
            }
            statuses
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = Instant::now();
    cluster.nodes[master].stop();
    // Trending answers again once a replica took over (and the breaker
    // let a call through).
    let deadline = killed + Duration::from_secs(30);
    loop {
        app.search("본문", "").await;
        app.state.search.trending.flush().await;
        let (status, body) = trending(&app).await;
        if status == 200 && keywords(&body).contains(&"본문".to_owned()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "trending did not come back: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let recovered = killed.elapsed();
    stop.store(true, Ordering::Relaxed);
    let statuses = load.await.unwrap();
    assert!(statuses.len() > 20, "only {} searches ran", statuses.len());
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    cluster.wait_ok();
    eprintln!(
        "trending back {:.1} s after its master was killed; {} searches, all 200",
        recovered.as_secs_f64(),
        statuses.len()
    );
    other.finish().await;
    Arc::into_inner(app).unwrap().finish().await;
}

/// Polls until `q` finds `want` rows.
async fn until_total(app: &TestApp, q: &str, want: u64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let body = app.search(q, "").await;
        if body["total"] == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{q}: total {} instead of {want}",
            body["total"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server whose indexer reads a real MariaDB replica
/// (`DATABASE_READ_URL`): writes go to the primary and become searchable
/// through the replica; while replication is paused they do not (the
/// replica is what is read), `/readyz` reports the lag and, past the
/// bound, stops claiming ready. And a transaction that commits on the
/// primary while the replica is paused, after the indexer saw the ids
/// around it, is not taken for a rollback: the primary has it, so its gap
/// waits for the replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_reading_a_mariadb_replica_follows_the_primary_through_it() {
    let (primary, replica) = PrivateMariaDb::replicated_pair().await;
    let (primary_url, replica_url) = (primary.url(), replica.url());
    let app = spawn_app_with(Store::MySql, |args| {
        args.store.database_url = primary_url.clone();
        args.mirror.database_read_url = Some(replica_url);
        args.mirror.max_replica_lag = std::time::Duration::from_secs(1);
    })
    .await;
    let user = app.create_user("u").await;
    app.create_question(user, "복제 첫 글", "본문").await;
    until_total(&app, "복제", 1, Duration::from_secs(20)).await;
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["replica"]["up"], true, "{ready}");

    // Replication paused: a write reaches the primary, not the replica,
    // so not the index; the lag shows and readiness goes.
    replica.admin("STOP SLAVE SQL_THREAD").await;
    app.create_question(user, "복제 둘째 글", "본문").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(app.search("복제", "").await["total"], 1);
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["replica"]["lagging"], true, "{ready}");
    assert!(
        ready["replica"]["behind_rows"].as_i64().unwrap() >= 1,
        "{ready}"
    );
    replica.admin("START SLAVE SQL_THREAD").await;
    until_total(&app, "복제", 2, Duration::from_secs(20)).await;
    wait_until(Duration::from_secs(10), "never ready again", || async {
        app.get("/readyz").await.0 == 200
    })
    .await;

    // A gap the primary settles while the replica lags: transaction A
    // takes an outbox id and stays open; B commits after it and reaches
    // the index through the replica, so A's id is a gap. Then the replica
    // pauses and A commits: the primary holds no lock on the gap any more
    // (settled), but the replica does not have it. A is applied once the
    // replica catches up, never forgotten.
    let writer = chaja_store::Db::connect_lazy(&primary_url, 2).unwrap();
    let mut a = writer.pool.begin().await.unwrap();
    sqlx::query(&format!(
        "INSERT INTO questions (author_id, title, content) VALUES ({user}, '간극 에이', '본문')"
    ))
    .execute(&mut *a)
    .await
    .unwrap();
    app.create_question(user, "간극 비", "본문").await;
    until_total(&app, "간극", 1, Duration::from_secs(20)).await;
    replica.admin("STOP SLAVE SQL_THREAD").await;
    a.commit().await.unwrap();
    // Several settling checks (one a second) while the replica lags.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(app.search("간극", "").await["total"], 1);
    replica.admin("START SLAVE SQL_THREAD").await;
    until_total(&app, "간극", 2, Duration::from_secs(20)).await;

    writer.pool.close().await;
    app.finish().await;
    drop((primary, replica));
}

/// HAProxy (Debian's, with `deploy/haproxy.cfg`) in front of 3 `chaja
/// serve` processes on one database. Under a steady search load one
/// replica is killed with SIGKILL and another is stopped with SIGTERM (it
/// drains: not ready at once, still answering): no search fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_haproxy_lose_no_search_when_one_dies_and_one_drains() {
    let app = spawn_app(Store::MySql).await;
    let user = app.create_user("u").await;
    for i in 0..20 {
        app.create_question(user, &format!("균형 {i}"), "로드 밸런서 뒤의 검색")
            .await;
    }
    app.wait_indexed().await;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut servers: Vec<Server> = (0..3)
        .map(|i| {
            Server::start(&[
                ("DATABASE_URL", app.args.store.database_url.clone()),
                ("CHAJA_INDEX_DIR", dirs[i].path().display().to_string()),
                ("CHAJA_BIND", format!("127.0.0.1:{}", ports[i])),
                ("CHAJA_DRAIN_MS", "1500".to_owned()),
                ("CHAJA_TRUSTED_PROXIES", "127.0.0.1".to_owned()),
            ])
        })
        .collect();
    let client = crate::http_client::Client::new();
    for port in &ports {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = client
                .get(format!("http://127.0.0.1:{port}/api/search?q=균형"))
                .send()
                .await
                .ok();
            let total = match ready {
                Some(r) if r.status() == 200 => r.json::<Value>().await.unwrap()["total"].clone(),
                _ => Value::Null,
            };
            if total == 20 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica on {port} never caught up"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let lb_port = free_port();
    let haproxy = std::process::Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(crate::helpers::workspace_root().join("deploy/haproxy.cfg"))
        .env("CHAJA_LB_BIND", format!("127.0.0.1:{lb_port}"))
        .env("CHAJA_1", format!("127.0.0.1:{}", ports[0]))
        .env("CHAJA_2", format!("127.0.0.1:{}", ports[1]))
        .env("CHAJA_3", format!("127.0.0.1:{}", ports[2]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("haproxy runs (apt-get install haproxy; .ci/run does)");
    let mut haproxy = KillOnDrop(haproxy);
    // Two health checks (rise 2, every 500 ms) bring every replica in.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let lb = format!("http://127.0.0.1:{lb_port}/api/search?q=균형");
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..4)
        .map(|_| {
            let (client, lb, stop) = (client.clone(), lb.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut ok, mut failed) = (0u32, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    match client.get(&lb).send().await {
                        Ok(r) if r.status() == 200 => {
                            let body: Value = r.json().await.unwrap();
                            assert_eq!(body["total"], 20);
                            ok += 1;
                        }
                        Ok(r) => failed.push(r.status().to_string()),
                        Err(e) => failed.push(e.to_string()),
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    servers[0].kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let term = std::process::Command::new("kill")
        .args(["-TERM", &servers[1].0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // Draining: still answering, but not ready, so the balancer moves on.
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let ready = client
            .get(format!("http://127.0.0.1:{}/readyz", ports[1]))
            .send()
            .await
            .unwrap();
        if ready.status() == 503 {
            assert_eq!(ready.json::<Value>().await.unwrap()["draining"], true);
            break;
        }
        assert!(Instant::now() < deadline, "not draining after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The drained one exits by itself once its drain is over.
    let deadline = Instant::now() + Duration::from_secs(10);
    while servers[1].0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "SIGTERM did not stop the replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut failed) = (0, Vec::new());
    for task in load {
        let (o, f) = task.await.unwrap();
        ok += o;
        failed.extend(f);
    }
    assert!(ok > 100, "only {ok} searches");
    assert!(
        failed.is_empty(),
        "{} of {} failed: {failed:?}",
        failed.len(),
        ok as usize + failed.len()
    );
    eprintln!(
        "{ok} searches through haproxy, none failed, with one replica killed and one drained"
    );
    let _ = haproxy.0.kill();
    app.finish().await;
}

/// Kills a child process when dropped (a failing test leaves none).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
