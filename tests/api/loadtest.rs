//! `chaja loadtest` against a real server: every scenario runs, is bounded,
//! and reports what it did.

use chaja_demo::seed::{seed, TextSource};
use chaja_loadtest::{LoadScenario, LoadtestConfig};

use crate::helpers::{spawn_app, spawn_app_on_schema, Store};

/// One load test at a time per process: they share goose's globals.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_and_reports() {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = spawn_app(Store::Sqlite).await;
    let seeded = seed(app.db(), 200, 3, &TextSource::Builtin, false)
        .await
        .unwrap();
    app.wait_indexed().await;
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.json");
    std::fs::write(&manifest, serde_json::to_vec(&seeded.manifest).unwrap()).unwrap();
    // One load test at a time per process: they share goose's globals.
    for run in [
        "search", "flow", "mixed", "abuse", "longtail", "hot", "manifest",
    ] {
        // `hot` is the search scenario on one keyword, `manifest` on the
        // keywords of the seed's manifest.
        let (scenario, keyword, from_manifest) = match run {
            "hot" => (LoadScenario::Search, Some("합니다".to_owned()), None),
            "manifest" => (LoadScenario::Search, None, Some(manifest.clone())),
            "flow" => (LoadScenario::Flow, None, None),
            "mixed" => (LoadScenario::Mixed, None, None),
            "abuse" => (LoadScenario::Abuse, None, None),
            "longtail" => (LoadScenario::Longtail, None, None),
            _ => (LoadScenario::Search, None, None),
        };
        let args = LoadtestConfig {
            host: format!("http://{}", app.addr),
            scenario,
            keyword,
            manifest: from_manifest,
            users: 4,
            hatch_rate: 4,
            run_time: 3,
            iterations: 0,
            report_dir: dir.path().join(run),
            admin_key: None,
        };
        let summary = chaja_loadtest::run(&args).await.unwrap();
        assert_eq!(summary.errors, 0, "{scenario}: {summary}");
        assert!(summary.executed > 0, "{scenario}: {summary}");
        assert!(summary.peak_tps > 0);
        for file in ["report.html", "report.json", "summary.json"] {
            let len = std::fs::metadata(dir.path().join(run).join(file)).map_or(0, |m| m.len());
            assert!(len > 0, "{run}: {file} is missing or empty");
        }
        // goose's HTML report: charts over time and a table per request.
        let html = std::fs::read_to_string(dir.path().join(run).join("report.html")).unwrap();
        for chart in ["graph-rps", "graph-avg-response-time", "graph-active-users"] {
            assert!(html.contains(chart), "{run}: no {chart} chart");
        }
        assert!(html.contains("Request Metrics"), "{run}: no request table");
        assert!(
            !html.contains("cdn.jsdelivr"),
            "{run}: the report needs the network"
        );
        let kinds: Vec<&str> = summary.kinds.iter().map(|k| k.kind.as_str()).collect();
        match run {
            "hot" => {
                let kinds: Vec<&str> = kinds.iter().map(|k| k.trim_start_matches("GET ")).collect();
                assert_eq!(kinds, ["search: hot"]);
            }
            "manifest" => {
                let expected = chaja_loadtest::Mix::from_manifest(&seeded.manifest);
                assert_eq!(summary.mix, expected);
                assert!(kinds.iter().all(|k| k.contains("search")), "{kinds:?}");
            }
            "search" => {
                assert!(!summary.mix.rare.is_empty() || !summary.mix.common.is_empty());
                assert!(kinds.iter().all(|k| k.contains("search")), "{kinds:?}");
            }
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
            "longtail" => {
                assert!(kinds.iter().all(|k| k.contains("longtail: ")), "{kinds:?}");
                // Every request a query of its own.
                assert_eq!(summary.unique_queries, Some(summary.executed), "{summary}");
            }
            "abuse" => {
                assert!(
                    kinds.iter().any(|k| k.contains("abuse: random from/to")),
                    "{kinds:?}"
                );
                assert!(kinds.iter().any(|k| k.contains("search: ")), "{kinds:?}");
            }
            _ => unreachable!(),
        }
    }
    // The report renders with no network: headless Chromium, its proxy a
    // closed port, draws every chart (echarts draws into canvases).
    let report = dir.path().join("search").join("report.html");
    assert_eq!(charts_drawn(&report), 5, "{}", report.display());
    app.finish().await;
}

/// Opens a page in headless Chromium with the network closed and counts
/// the canvases in the DOM once its scripts have run. Chromium comes from
/// Debian's `chromium` package, which `.ci/run` installs.
fn charts_drawn(page: &std::path::Path) -> usize {
    let output = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--proxy-server=127.0.0.1:9",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (apt-get install chromium; .ci/run does)");
    String::from_utf8_lossy(&output.stdout)
        .matches("<canvas")
        .count()
}

/// A table of its own, not the board (`crate::fixtures`): a note has no
/// author and its time is epoch milliseconds, which the rows below are
/// written for.
const NOTES: &[&str] = &["CREATE TABLE note (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
)"];

const NOTES_CONFIG: &str = r#"
[[source]]
name = "note"
table = "note"
id = "id"
created_at = "created_at"
fields = ["title", "body"]
"#;

/// The read-only scenarios run against a server of a site's own tables,
/// which has no demo route, through the search API alone; the ones that
/// need the demo's writes say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_scenarios_run_against_a_server_of_any_tables() {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = spawn_app_on_schema(Store::Sqlite, NOTES, NOTES_CONFIG).await;
    let words = [
        "배포",
        "스키마",
        "인덱스",
        "트랜잭션",
        "캐시",
        "로그",
        "쿼리",
        "서버",
    ];
    for i in 0..300i64 {
        let (a, b) = (words[i as usize % 8], words[(i as usize / 8) % 8]);
        app.sql(&format!(
            "INSERT INTO note (title, body, created_at) VALUES ('{a} 메모 {i}', '오늘 {b} 작업을 마쳤고 {a} 설정도 바꿨다 {i}', {})",
            1_700_000_000_000 + i * 3_600_000
        ))
        .await;
    }
    app.wait_indexed().await;
    let dir = tempfile::tempdir().unwrap();
    for scenario in [LoadScenario::Longtail, LoadScenario::Search] {
        let args = LoadtestConfig {
            host: format!("http://{}", app.addr),
            scenario,
            keyword: None,
            manifest: None,
            users: 4,
            hatch_rate: 4,
            run_time: 3,
            iterations: 0,
            report_dir: dir.path().join(scenario.to_string()),
            admin_key: None,
        };
        let summary = chaja_loadtest::run(&args).await.unwrap();
        assert!(summary.to_string().starts_with("TPS"), "{summary}");
        assert_eq!(summary.errors, 0, "{scenario}: {summary}");
        assert!(summary.executed > 0, "{scenario}: {summary}");
        if scenario == LoadScenario::Longtail {
            assert_eq!(summary.unique_queries, Some(summary.executed), "{summary}");
        }
    }
    let flow = LoadtestConfig {
        host: format!("http://{}", app.addr),
        scenario: LoadScenario::Flow,
        keyword: Some("배포".to_owned()),
        manifest: None,
        users: 1,
        hatch_rate: 1,
        run_time: 1,
        iterations: 0,
        report_dir: dir.path().join("flow"),
        admin_key: None,
    };
    let refused = chaja_loadtest::run(&flow).await.unwrap_err().to_string();
    assert!(refused.contains("demo platform"), "{refused}");
    app.finish().await;
}
