//! Redis for tests: the shared server's URL, a private server to stop or
//! freeze, and a private Redis Cluster.

use std::time::{Duration, Instant};

use super::free_port;

/// The Redis server for tests; CI starts it.
pub fn redis_url() -> String {
    std::env::var("CHAJA_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A private redis-server on a free port, stopped on drop.
pub struct RedisServer {
    child: std::process::Child,
    pub port: u16,
}

impl RedisServer {
    pub fn start_on(port: u16) -> RedisServer {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (see .ci/run)");
        RedisServer { child, port }
    }

    pub fn start() -> RedisServer {
        RedisServer::start_on(free_port())
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// For SIGSTOP and SIGCONT.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_running(&self) -> bool {
        std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A private Redis Cluster: `masters` masters with `replicas` replicas
/// each, on loopback, node timeout 1 s (a failover takes a few seconds).
/// Stopped on drop.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    pub fn start(masters: usize, replicas: usize) -> RedisCluster {
        let dir = tempfile::tempdir().unwrap();
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|i| RedisCluster::start_node(dir.path(), i))
            .collect();
        let status = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(status.success(), "redis-cli --cluster create");
        let cluster = RedisCluster { nodes, _dir: dir };
        cluster.wait_ok();
        cluster
    }

    /// Node `i`, up and listening. A free port is only free until some
    /// other test takes it: a node that exits (its port, or its bus port
    /// at port + 10000, taken in between) is started again on another.
    fn start_node(dir: &std::path::Path, i: usize) -> RedisServer {
        for _ in 0..5 {
            let port = loop {
                let port = free_port();
                if port < 55_000
                    && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
                {
                    break port;
                }
            };
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"])
                // Replicas sync at once (the default waits 5 s), so that
                // one can take over from the start.
                .args(["--repl-diskless-sync-delay", "0"])
                .arg("--cluster-config-file")
                .arg(dir.join(format!("nodes-{i}.conf")))
                .arg("--dir")
                .arg(dir)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server must be installed (see .ci/run)");
            let mut node = RedisServer { child, port };
            let deadline = Instant::now() + Duration::from_secs(20);
            while !node.is_running() {
                if node.child.try_wait().ok().flatten().is_some() {
                    break; // it exited: try another port
                }
                assert!(
                    Instant::now() < deadline,
                    "redis-server on {port} never came up"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            if node.is_running() {
                return node;
            }
        }
        panic!("redis-server exited five times: ports taken by other tests?");
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// One node's `CLUSTER INFO` field.
    fn info(port: u16, field: &str) -> Option<String> {
        let output = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "info"])
            .output()
            .ok()?;
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{field}:"))
                    .map(|v| v.trim().to_owned())
            })
    }

    /// Waits until every running node says the cluster is ok and every
    /// replica is in sync with its master (only a synced replica takes
    /// over from a failed master).
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = self.nodes.iter().filter(|n| n.is_running()).all(|n| {
                RedisCluster::info(n.port, "cluster_state").as_deref() == Some("ok")
                    && replica_in_sync(n.port)
            });
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the redis cluster never became ok"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The node serving `key`'s slot as master.
    pub fn master_of(&self, key: &str) -> usize {
        let port = self.nodes.iter().find(|n| n.is_running()).unwrap().port;
        let output = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "keyslot", key])
            .output()
            .unwrap();
        let slot: u16 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        let output = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "nodes"])
            .output()
            .unwrap();
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if !fields.get(2).is_some_and(|f| f.contains("master")) || fields[2].contains("fail") {
                continue;
            }
            let serves = fields[8..].iter().any(|range| {
                let (first, last) = range.split_once('-').unwrap_or((range, range));
                matches!((first.parse::<u16>(), last.parse::<u16>()), (Ok(a), Ok(b)) if a <= slot && slot <= b)
            });
            if serves {
                let node_port: u16 = fields[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
                return self.nodes.iter().position(|n| n.port == node_port).unwrap();
            }
        }
        panic!("no master serves slot {slot}");
    }
}

/// A master, or a replica whose link to its master is up.
fn replica_in_sync(port: u16) -> bool {
    let Ok(output) = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "replication"])
        .output()
    else {
        return false;
    };
    let info = String::from_utf8_lossy(&output.stdout);
    info.contains("role:master") || info.contains("master_link_status:up")
}
