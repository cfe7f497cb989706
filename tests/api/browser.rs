//! The pages in a real browser: headless Chromium from Debian's `chromium`
//! and `chromium-driver` packages (`.ci/run` installs them), driven over
//! WebDriver. Screenshots land in `target/tmp/browser/`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::helpers::{free_port, spawn_app_with, Store, TestApp};

/// chromedriver on a port of its own, killed with the test.
struct Driver {
    process: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        let port = free_port();
        let process = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs (apt-get install chromium-driver; .ci/run does)");
        Driver { process, port }
    }

    /// A browser session at `width × height`. Every request outside this
    /// machine goes to a proxy that does not exist: the pages must work
    /// offline.
    async fn open(&self, width: u32, height: u32) -> Client {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({ "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--proxy-server=127.0.0.1:9", "--lang=ko-KR",
                format!("--window-size={width},{height}"),
            ] }),
        );
        let url = format!("http://127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut builder = ClientBuilder::native();
            builder.capabilities(capabilities.clone());
            match builder.connect(&url).await {
                Ok(client) => return client,
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!(error = %e, "chromedriver not up yet");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("no browser session: {e}"),
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Where screenshots go: under the tests' own output directory.
fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
    std::fs::write(shots().join(name), png).unwrap();
}

/// Waits until `script` (a JS expression) is truthy, and returns its value.
async fn until(browser: &Client, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let value = browser
            .execute(&format!("return {script};"), vec![])
            .await
            .unwrap();
        let truthy = match &value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            _ => true,
        };
        if truthy {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {script}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(browser: &Client, css: &str) -> String {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn click(browser: &Client, css: &str) {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn url(browser: &Client) -> String {
    browser.current_url().await.unwrap().to_string()
}

async fn displayed(browser: &Client, css: &str) -> bool {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap()
        .is_displayed()
        .await
        .unwrap()
}

async fn hit_count(browser: &Client) -> usize {
    browser
        .find_all(Locator::Css("#results li.hit"))
        .await
        .unwrap()
        .len()
}

/// 25 questions and 3 reviews that contain 트랜잭션, one of the questions
/// titled with markup; titles that make 클라우드 a suggestion.
async fn seeded() -> (TestApp, i64) {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    let user = app.create_user("u").await;
    let mut first = 0;
    for i in 0..25 {
        let id = app
            .create_question(
                user,
                &format!("트랜잭션 격리 수준 {i}번 질문"),
                "스프링에서 트랜잭션 전파가 궁금합니다",
            )
            .await;
        if i == 0 {
            first = id;
        }
    }
    app.create_question(
        user,
        "<img src=x onerror=window.__xss=1>",
        "제목에 태그를 넣은 트랜잭션 질문",
    )
    .await;
    for _ in 0..3 {
        app.create_review(first, user, "트랜잭션 경계를 서비스에 두세요")
            .await;
    }
    for title in ["클라우드 비용", "클라우드 네트워크", "클라우드 보안"] {
        app.create_question(user, title, "본문").await;
    }
    app.wait_indexed().await;
    app.state
        .search
        .suggester
        .refresh(&app.state.search.index, &app.state.search.trending)
        .await
        .unwrap();
    (app, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_page_in_a_browser() {
    let (app, oldest) = seeded().await;
    let driver = Driver::start();
    let browser = driver.open(1280, 900).await;

    // A shared link shows its results on load: the exact total, and hits
    // with the keyword highlighted.
    browser
        .goto(&app.url("/?q=%ED%8A%B8%EB%9E%9C%EC%9E%AD%EC%85%98"))
        .await
        .unwrap();
    until(
        &browser,
        "the total",
        "document.querySelector('#total')?.textContent.includes('총 29건')",
    )
    .await;
    assert_eq!(hit_count(&browser).await, 20);
    let highlighted = browser
        .find_all(Locator::Css("#results li.hit em"))
        .await
        .unwrap();
    assert!(!highlighted.is_empty());
    assert_eq!(highlighted[0].text().await.unwrap(), "트랜잭션");
    assert_eq!(
        browser
            .find(Locator::Css("#q"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("트랜잭션")
    );
    // Per-type counts on the tabs.
    let tabs = text(&browser, "#types").await;
    assert!(tabs.contains("26") && tabs.contains('3'), "{tabs}");

    // The title with markup is text: no element made from it, no script run.
    let hostile = until(
        &browser,
        "the hostile title",
        "[...document.querySelectorAll('#results .hit-title')].map(e => e.textContent).find(t => t.includes('onerror'))",
    )
    .await;
    assert_eq!(hostile, "<img src=x onerror=window.__xss=1>");
    let injected = browser
        .execute(
            "return [document.querySelectorAll('#results img').length, window.__xss === undefined];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(injected, json!([0, true]));
    screenshot(&browser, "search-desktop.png").await;

    // Scrolling to the end loads the next cursor page, in order, without
    // repeats.
    browser
        .execute("window.scrollTo(0, document.body.scrollHeight);", vec![])
        .await
        .unwrap();
    until(
        &browser,
        "the second page",
        "document.querySelectorAll('#results li.hit').length === 29",
    )
    .await;
    let ids = browser
        .execute(
            "return [...document.querySelectorAll('#results li.hit')].map(e => e.dataset.type + e.dataset.id);",
            vec![],
        )
        .await
        .unwrap();
    let ids: Vec<String> = serde_json::from_value(ids).unwrap();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");

    // Type, then sort: each is a history entry the back button returns to.
    click(&browser, "#types [data-type=review]").await;
    until(
        &browser,
        "the review total",
        "document.querySelector('#total').textContent.includes('총 3건')",
    )
    .await;
    until(&browser, "only reviews", "[...document.querySelectorAll('#results li.hit')].every(e => e.dataset.type === 'review') && document.querySelectorAll('#results li.hit').length === 3").await;
    assert!(url(&browser).await.contains("type=review"));

    click(&browser, "#types [data-type=question]").await;
    until(
        &browser,
        "the question total",
        "document.querySelector('#total').textContent.includes('총 26건')",
    )
    .await;
    browser
        .find(Locator::Css("#sort"))
        .await
        .unwrap()
        .select_by_value("oldest")
        .await
        .unwrap();
    until(
        &browser,
        "the oldest question first",
        &format!("document.querySelector('#results li.hit')?.dataset.id === '{oldest}'"),
    )
    .await;
    assert!(url(&browser).await.contains("sort=oldest"));

    browser.back().await.unwrap();
    until(&browser, "newest first again", "document.querySelector('#sort').value === 'recent' && document.querySelector('#results li.hit')?.dataset.id !== undefined").await;
    until(
        &browser,
        "the newest question first",
        &format!("document.querySelector('#results li.hit')?.dataset.id !== '{oldest}' && document.querySelector('#total').textContent.includes('총 26건')"),
    )
    .await;
    browser.back().await.unwrap();
    until(&browser, "reviews again", "document.querySelector('#total').textContent.includes('총 3건') && document.querySelector('#types [data-type=review]').getAttribute('aria-selected') === 'true'").await;

    // Mobile width: the same page, nothing wider than the screen.
    browser.set_window_size(390, 844).await.unwrap();
    let overflow = browser
        .execute(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        overflow.as_f64().unwrap() <= 0.0,
        "wider than the screen by {overflow}"
    );
    screenshot(&browser, "search-mobile.png").await;

    browser.close().await.unwrap();
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suggestions_by_keyboard_and_accessible_controls() {
    let (app, _) = seeded().await;
    let driver = Driver::start();
    let browser = driver.open(1280, 900).await;
    browser.goto(&app.url("/")).await.unwrap();

    // 초성 of 클라우드: pick the first suggestion with the keyboard.
    let input = browser
        .wait()
        .for_element(Locator::Css("#q"))
        .await
        .unwrap();
    input.send_keys("ㅋㄹㅇㄷ").await.unwrap();
    until(
        &browser,
        "a suggestion",
        "document.querySelector('#suggestions [role=option]')?.textContent",
    )
    .await;
    input.send_keys(&Key::Down.to_string()).await.unwrap();
    let active = until(
        &browser,
        "an active option",
        "document.querySelector('#suggestions [aria-selected=true]')?.textContent",
    )
    .await;
    assert_eq!(active, "클라우드");
    assert_eq!(
        input.attr("aria-activedescendant").await.unwrap(),
        browser
            .find(Locator::Css("#suggestions [aria-selected=true]"))
            .await
            .unwrap()
            .attr("id")
            .await
            .unwrap()
    );
    input.send_keys(&Key::Enter.to_string()).await.unwrap();
    until(&browser, "the picked search", "document.querySelector('#q').value === '클라우드' && document.querySelector('#total').textContent.includes('총 3건')").await;
    assert!(url(&browser)
        .await
        .contains("q=%ED%81%B4%EB%9D%BC%EC%9A%B0%EB%93%9C"));

    // Typing alone searches: results as you type, the URL following.
    input.clear().await.unwrap();
    input.send_keys("트랜잭").await.unwrap();
    until(
        &browser,
        "results as typed",
        "document.querySelector('#total').textContent.includes('총 29건') && document.querySelector('#results li.hit em')?.textContent === '트랜잭'",
    )
    .await;
    until(
        &browser,
        "the URL of the typed query",
        "decodeURIComponent(location.search).includes('q=트랜잭')",
    )
    .await;

    // Every control has a label, and Tab walks them in reading order.
    let unlabeled = browser
        .execute(
            "return [...document.querySelectorAll('input, select, textarea')]
                .filter(e => e.type !== 'hidden' && e.labels.length === 0 && !e.getAttribute('aria-label'))
                .map(e => e.id || e.outerHTML);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(unlabeled, json!([]));
    let mut focused = Vec::new();
    // Tab from the logo, the page's first stop: a click on the body would
    // start the walk wherever the body's middle falls, among the results
    // (each with its own 관련 질문 button) on a long page.
    browser
        .execute("document.querySelector('.logo a').focus();", vec![])
        .await
        .unwrap();
    // A date input takes three Tabs (year, month, day).
    for _ in 0..24 {
        // A key press to whatever has focus (not to an element handle,
        // which a re-render could make stale).
        let tab = KeyActions::new("keyboard".to_owned())
            .then(KeyAction::Down {
                value: Key::Tab.into(),
            })
            .then(KeyAction::Up {
                value: Key::Tab.into(),
            });
        browser.perform_actions(tab).await.unwrap();
        let id = browser
            .execute("return document.activeElement.id || document.activeElement.dataset.type || document.activeElement.tagName;", vec![])
            .await
            .unwrap();
        focused.push(id.as_str().unwrap_or_default().to_owned());
    }
    let position = |id: &str| {
        focused
            .iter()
            .position(|f| f == id)
            .unwrap_or_else(|| panic!("{id} never focused: {focused:?}"))
    };
    assert!(position("q") < position("sort"), "{focused:?}");
    assert!(position("sort") < position("from"), "{focused:?}");
    assert!(position("from") < position("to"), "{focused:?}");
    assert!(position("tab-all") < position("sort"), "{focused:?}");

    // Text contrast passes WCAG AA: 4.5:1, or 3:1 for large text.
    let failures = browser.execute(CONTRAST, vec![]).await.unwrap();
    assert_eq!(failures, json!([]), "text below WCAG AA contrast");

    browser.close().await.unwrap();
    app.finish().await;
}

/// Every visible text element's contrast against the background it sits
/// on (the first opaque one up its ancestors), by WCAG 2.1's formula.
/// Answers the failures.
const CONTRAST: &str = r#"
const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
const luminance = ([r, g, b]) => {
  const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const background = el => {
  for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
  }
  return [255, 255, 255];
};
const failures = [];
for (const el of document.querySelectorAll('body *')) {
  const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.getClientRects().length) continue;
  const style = getComputedStyle(el);
  if (style.visibility === 'hidden' || style.opacity === '0') continue;
  if (el.closest('.visually-hidden')) continue;
  const [l1, l2] = [luminance(rgb(style.color)), luminance(background(el))].sort((a, b) => b - a);
  const ratio = (l1 + 0.05) / (l2 + 0.05);
  const size = parseFloat(style.fontSize);
  const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
  if (ratio < (large ? 3 : 4.5)) failures.push(`${el.tagName}#${el.id}.${el.className}: ${ratio.toFixed(2)}`);
}
return failures;
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_needs_the_admin_key_and_runs_verify_and_reindex() {
    let app = spawn_app_with(Store::Sqlite, |args| {
        args.keys.admin_key = Some("console-key".to_owned());
    })
    .await;
    let user = app.create_user("u").await;
    let question = app.create_question(user, "콘솔 질문", "본문").await;
    app.create_review(question, user, "콘솔 리뷰").await;
    app.wait_indexed().await;
    let driver = Driver::start();
    let browser = driver.open(1280, 1000).await;

    // No key: the shell loads, the data does not.
    browser.goto(&app.url("/console")).await.unwrap();
    until(
        &browser,
        "the key prompt",
        "document.querySelector('#auth-error')?.textContent.includes('필요')",
    )
    .await;
    assert!(!displayed(&browser, "#dashboard").await);

    // A wrong key is refused.
    let key = browser.find(Locator::Css("#admin-key")).await.unwrap();
    key.send_keys("wrong").await.unwrap();
    key.send_keys(&Key::Enter.to_string()).await.unwrap();
    until(
        &browser,
        "the refusal",
        "document.querySelector('#auth-error')?.textContent.includes('올바르지')",
    )
    .await;

    // The right key opens the dashboard, and it is kept for the session.
    let key = browser.find(Locator::Css("#admin-key")).await.unwrap();
    key.clear().await.unwrap();
    key.send_keys("console-key").await.unwrap();
    key.send_keys(&Key::Enter.to_string()).await.unwrap();
    until(
        &browser,
        "the document count",
        "document.querySelector('#doc-count')?.textContent.trim() === '2'",
    )
    .await;
    assert!(displayed(&browser, "#dashboard").await);
    // What the sources keep in columns: the demo's facet and orders.
    assert_eq!(text(&browser, "#facet-names").await, "rating");
    assert_eq!(
        text(&browser, "#sortable-names").await,
        "like_count, rating"
    );
    browser.refresh().await.unwrap();
    until(
        &browser,
        "the dashboard after a reload",
        "document.querySelector('#doc-count')?.textContent.trim() === '2'",
    )
    .await;
    until(
        &browser,
        "readiness",
        "document.querySelector('#ready')?.textContent.includes('정상')",
    )
    .await;

    // Verify, from the button.
    click(&browser, "#run-verify").await;
    until(
        &browser,
        "the verify result",
        "document.querySelector('#verify-card')?.textContent.includes('일치')",
    )
    .await;

    // Reindex, with its progress, to the swap.
    let before = app.state.search.index.live().id;
    click(&browser, "#run-reindex").await;
    if browser.get_alert_text().await.is_ok() {
        browser.accept_alert().await.unwrap();
    }
    until(
        &browser,
        "the swap",
        "document.querySelector('#reindex-state')?.textContent.includes('교체')",
    )
    .await;
    assert!(app.state.search.index.live().id > before);
    screenshot(&browser, "console.png").await;

    browser.close().await.unwrap();
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_reference_renders_offline() {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    let driver = Driver::start();
    let browser = driver.open(1280, 900).await;
    browser.goto(&app.url("/api-docs")).await.unwrap();
    let operations = until(
        &browser,
        "the operations",
        "document.querySelectorAll('.opblock').length",
    )
    .await;
    assert!(operations.as_u64().unwrap() >= 20, "{operations}");
    let page = browser.source().await.unwrap();
    assert!(
        page.contains("/api/search"),
        "the search operation is listed"
    );
    browser.close().await.unwrap();
    app.finish().await;
}

/// The interface the issue fixes: `chromium --dump-dom` of a shared link
/// prints the total and the highlighted hits in the ordinary DOM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dump_dom_of_a_shared_link_has_the_results() {
    let (app, _) = seeded().await;
    let url = app.url("/?q=%ED%8A%B8%EB%9E%9C%EC%9E%AD%EC%85%98&type=review");
    let output = tokio::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=6000",
            "--dump-dom",
            &url,
        ])
        .output()
        .await
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(dom.contains("총 3건"), "{dom}");
    assert_eq!(dom.matches("<em>트랜잭션</em>").count(), 3, "{dom}");
    app.finish().await;
}

/// The pages are served with a policy that allows no inline script, and
/// unknown assets are a JSON 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_served_with_a_strict_policy() {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    for path in ["/", "/console", "/assets/search.js", "/assets/style.css"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        let body = response.text().await.unwrap();
        if path.ends_with(".js") || path.ends_with(".css") {
            continue;
        }
        assert!(!body.contains("<script>"), "{path} has an inline script");
        assert!(!has_inline_handler(&body), "{path} has an inline handler");
    }
    let (status, body) = app.get("/assets/nope.js").await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (404, &"not_found".into())
    );
    app.finish().await;
}

/// Whether HTML has an attribute like `onclick=`.
fn has_inline_handler(html: &str) -> bool {
    html.match_indices(" on").any(|(at, _)| {
        let rest = &html[at + 3..];
        let name_len = rest.chars().take_while(char::is_ascii_lowercase).count();
        name_len > 0 && rest[name_len..].starts_with('=')
    })
}

/// The review ratings as chips with counts; clicking ★5 filters to those
/// reviews, the total follows, and clicking it again clears the filter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_facet_chip_filters_the_results() {
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    let user = app.create_user("u").await;
    let question = app
        .create_question(user, "배송 질문", "배송이 늦어요")
        .await;
    for (i, rating) in [5, 5, 5, 4, 4, 1].into_iter().enumerate() {
        let (status, body) = app
            .post(
                &format!("/api/questions/{question}/reviews"),
                json!({ "author_id": user, "content": format!("배송 후기 {i}"), "rating": rating }),
            )
            .await;
        assert_eq!(status, crate::http_client::StatusCode::CREATED, "{body}");
    }
    app.wait_indexed().await;
    let driver = Driver::start();
    let browser = driver.open(1280, 900).await;
    browser
        .goto(&app.url("/?q=%EB%B0%B0%EC%86%A1"))
        .await
        .unwrap();
    until(
        &browser,
        "the total",
        "document.querySelector('#total')?.textContent.includes('총 7건')",
    )
    .await;
    let chips = until(
        &browser,
        "the rating chips",
        "[...document.querySelectorAll('#facets button.chip')].map(c => c.textContent).join('|')",
    )
    .await;
    assert_eq!(chips, "★5 3|★4 2|★1 1", "{chips}");
    // The search page also offers 추천순 and 평점순 from the sources.
    let orders = text(&browser, "#sort").await;
    assert!(
        orders.contains("추천순") && orders.contains("평점순"),
        "{orders}"
    );
    click(&browser, "#facets button.chip[data-value='5']").await;
    until(
        &browser,
        "the filtered total",
        "document.querySelector('#total')?.textContent.includes('총 3건')",
    )
    .await;
    assert!(url(&browser).await.contains("attr.rating=5"));
    assert_eq!(hit_count(&browser).await, 3);
    let pressed = until(
        &browser,
        "the pressed chip",
        "document.querySelector('#facets button.chip[aria-pressed=\"true\"]')?.textContent",
    )
    .await;
    assert_eq!(pressed, "★5 3");
    screenshot(&browser, "facet-chip.png").await;
    click(&browser, "#facets button.chip[data-value='5']").await;
    until(
        &browser,
        "the total again",
        "document.querySelector('#total')?.textContent.includes('총 7건')",
    )
    .await;
    browser.close().await.unwrap();
    app.finish().await;
}

/// The demo's question form shows similar questions under the title as it
/// is typed (issue 65), and the search page shows a hit's related
/// questions on its detail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn similar_questions_appear_as_a_question_is_typed() {
    let (app, _) = seeded().await;
    let driver = Driver::start();
    let browser = driver.open(1280, 900).await;

    browser.goto(&app.url("/ask")).await.unwrap();
    assert!(!displayed(&browser, "#similar-section").await);
    browser
        .find(Locator::Css("#title"))
        .await
        .unwrap()
        .send_keys("스프링 트랜잭션 전파 질문")
        .await
        .unwrap();
    until(
        &browser,
        "a similar question under the title",
        "document.querySelectorAll('#similar li').length",
    )
    .await;
    assert!(displayed(&browser, "#similar-section").await);
    let first = text(&browser, "#similar li strong").await;
    assert!(first.contains("트랜잭션"), "{first}");
    screenshot(&browser, "ask-similar.png").await;

    browser
        .goto(&app.url("/?q=%ED%8A%B8%EB%9E%9C%EC%9E%AD%EC%85%98"))
        .await
        .unwrap();
    until(
        &browser,
        "the hits",
        "document.querySelectorAll('#results li.hit').length",
    )
    .await;
    click(&browser, "#results li.hit .related-toggle").await;
    until(
        &browser,
        "the hit's related questions",
        "document.querySelectorAll('#results .related li').length",
    )
    .await;
    screenshot(&browser, "search-related.png").await;
    browser.close().await.unwrap();
    app.finish().await;
}
