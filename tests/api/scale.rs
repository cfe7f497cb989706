//! Scale-out on real parts: a Redis Cluster under the cache, trending and
//! the recompute locks; MariaDB read replicas; replicas behind HAProxy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::{spawn_app_with, RedisCluster, Store, TestApp};

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
            args.redis_url = Some(url);
            // Answers from the other server count as fresh for a minute.
            args.cache_max_stale_ms = 60_000;
            // The cluster client refreshes its slot map within a call.
            args.redis_timeout_ms = 250;
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
    app.state.trending.flush().await;
    let (status, body) = trending(&app).await;
    assert_eq!(status, 200, "{body}");
    let mut found = keywords(&body);
    found.sort();
    assert_eq!(found, ["레디스", "클러스터"]);

    // Kill the master that holds trending's slot, under search load.
    let tag = format!("{{{}:trend}}", app.args.cache_prefix);
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
                    .get(&format!("/api/search?q=클러스터&author_id={n}"))
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
        app.state.trending.flush().await;
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
