//! `chaja loadtest` against a real server: every scenario runs, is bounded,
//! and reports what it did.

use chaja::config::LoadtestArgs;
use chaja::seed::{seed, TextSource};

use crate::helpers::{spawn_app, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_and_reports() {
    let app = spawn_app(Store::Sqlite).await;
    seed(app.db(), 200, 3, &TextSource::Builtin, false)
        .await
        .unwrap();
    app.wait_indexed().await;
    let dir = tempfile::tempdir().unwrap();
    // One load test at a time per process: they share goose's globals.
    for scenario in ["search", "flow", "mixed"] {
        let args = LoadtestArgs {
            host: format!("http://{}", app.addr),
            scenario: scenario.to_owned(),
            users: 4,
            hatch_rate: 4,
            run_time: 3,
            iterations: 0,
            report_dir: dir.path().join(scenario),
        };
        let summary = chaja::loadtest::run(&args).await.unwrap();
        assert_eq!(summary.errors, 0, "{scenario}: {summary}");
        assert!(summary.executed > 0, "{scenario}: {summary}");
        assert!(summary.peak_tps > 0);
        assert!(!summary.mix.rare.is_empty() || !summary.mix.common.is_empty());
        for file in ["report.html", "report.json", "summary.json"] {
            assert!(
                dir.path().join(scenario).join(file).exists(),
                "{scenario}: {file}"
            );
        }
        let kinds: Vec<&str> = summary.kinds.iter().map(|k| k.kind.as_str()).collect();
        match scenario {
            "flow" => {
                for step in [
                    "1 question: create",
                    "4 review: read",
                    "6 top liked",
                    "7 comment: create",
                ] {
                    assert!(
                        kinds.iter().any(|k| k.contains(step)),
                        "{step} missing from {kinds:?}"
                    );
                }
            }
            "mixed" => {
                let lag = summary
                    .freshness_lag_ms
                    .as_ref()
                    .expect("mixed measures lag");
                assert!(lag["samples"] >= 1.0);
            }
            _ => assert!(kinds.iter().all(|k| k.contains("search")), "{kinds:?}"),
        }
    }
    app.finish().await;
}
