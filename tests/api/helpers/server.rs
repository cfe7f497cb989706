//! The `chaja` binary as a separate process, and waiting for it to serve.

use std::time::{Duration, Instant};

/// Waits until a server started on `base` (`http://127.0.0.1:port`)
/// answers `/healthz`; fails after 30 s.
pub async fn wait_until_serving(base: &str) {
    let client = crate::http_client::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server at {base} did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `chaja serve` as a separate process, killed when dropped so that a
/// failing test leaves nothing running.
pub struct Server(pub std::process::Child);

impl Server {
    /// Logs go to `CHAJA_TEST_SERVER_LOG` when it is set.
    pub fn start(envs: &[(&str, String)]) -> Server {
        let log = std::env::var("CHAJA_TEST_SERVER_LOG")
            .ok()
            .and_then(|path| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .ok()
            });
        Server::start_logged(envs, log)
    }

    pub fn start_logged(envs: &[(&str, String)], log: Option<std::fs::File>) -> Server {
        Server::start_in(None, envs, log)
    }

    /// In working directory `dir`, when given.
    pub fn start_in(
        dir: Option<&std::path::Path>,
        envs: &[(&str, String)],
        log: Option<std::fs::File>,
    ) -> Server {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chaja"));
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        command
            .arg("serve")
            .env("RUST_LOG", "info,tantivy=info")
            // Logs go to stdout.
            .stdout(log.map_or_else(std::process::Stdio::null, std::process::Stdio::from))
            .stderr(std::process::Stdio::null());
        for (key, value) in envs {
            command.env(key, value);
        }
        Server(command.spawn().expect("chaja binary starts"))
    }

    /// SIGKILL: no shutdown, no final commit.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
