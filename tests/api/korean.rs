//! Korean morphology: particles and endings dropped, relevance order,
//! `match=morph`, suggestions (초성, half-typed syllables, keyboard layout),
//! and the n-gram-only mode without a dictionary.

use std::time::{Duration, Instant};

use serde_json::Value;

use chaja_index::morph;

use crate::helpers::{
    dictionary_with_user_words, free_port, ko_dic, spawn_app, spawn_app_with, wait_until,
    wait_until_serving, Server, Store,
};

crate::both_stores!(text_edits_replace_each_rows_morphemes);

fn analyzer() -> &'static morph::Analyzer {
    let analyzer = morph::init(&ko_dic());
    assert_eq!(
        analyzer.name(),
        "ko-dic-3",
        "build the dictionary first: .ci/run, or chaja dict build (see README)"
    );
    analyzer
}

#[test]
fn particles_and_endings_are_dropped_and_stems_kept() {
    let a = analyzer();
    assert_eq!(
        a.morphemes("클라우드를 사용하여 서버를 배포했습니다"),
        ["클라우드", "사용", "서버", "배포"]
    );
    assert_eq!(a.morphemes("클라우드에서"), a.morphemes("클라우드를"));
    // An inflected adjective keeps its stem; Latin is lowercased.
    assert_eq!(a.morphemes("빠른 JPA 쿼리"), ["빠르", "jpa", "쿼리"]);
    assert!(a.morphemes("니다").is_empty());
}

/// Rows are analysed through a cache of sentences: a row's morphemes are
/// the text's, whether its sentences were met before or not, and a
/// sentence cached from one row is not confused with another.
#[test]
fn cached_sentence_analyses_give_the_texts_morphemes() {
    let a = analyzer();
    let text = "클라우드를 사용하여 서버를 배포했습니다. 빠른 JPA 쿼리!\n\
                캐시 검증 문장입니다. 클라우드를 사용하여 서버를 배포했습니다.";
    let expected: String = a.morphemes(text).iter().map(|m| format!(" {m}")).collect();
    assert!(
        expected.contains(" 배포 ") && expected.ends_with(" 배포"),
        "{expected}"
    );
    for _ in 0..2 {
        let mut indexed = String::new();
        a.index_morphemes(text, &mut indexed);
        assert_eq!(indexed, expected);
    }
    let mut other = String::new();
    a.index_morphemes("빠른 JPA 쿼리! 새로운 문장", &mut other);
    assert_eq!(other, " 빠르 jpa 쿼리 새롭 문장");
}

/// The index gets morphemes joined by spaces and split again by tantivy's
/// whitespace tokenizer, while queries look morphemes up whole: a morpheme
/// with ASCII whitespace inside would never match.
#[test]
fn morphemes_survive_the_whitespace_round_trip() {
    use tantivy::tokenizer::{TokenStream, Tokenizer, WhitespaceTokenizer};
    let a = analyzer();
    let text = "윈도우\r\n줄바꿈\t탭\u{3000}전각공백 Spring\u{00A0}Boot v1.2.3 \
                foo_bar-baz \u{000C}폼피드 ＦＵＬＬ　ＷＩＤＴＨ 챗지피티";
    let morphemes = a.morphemes(text);
    assert!(morphemes.len() >= 8, "{morphemes:?}");
    let joined = morphemes.join(" ");
    let mut tokenizer = WhitespaceTokenizer::default();
    let mut stream = tokenizer.token_stream(&joined);
    let mut split = Vec::new();
    while stream.advance() {
        split.push(stream.token().text.clone());
    }
    assert_eq!(split, morphemes);
}

fn ids(body: &Value) -> Vec<i64> {
    body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_i64().unwrap())
        .collect()
}

/// A Korean reader asked "which posts are about 클라우드, most first".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relevance_ranks_what_is_about_the_keyword_first() {
    analyzer();
    let app = spawn_app(Store::Sqlite).await;
    let user = app.create_user("u").await;
    let passing = app
        .create_question(
            user,
            "서버 로그 질문",
            "어제 배포한 서버의 로그가 사라졌습니다. 설정 파일은 그대로이고 디스크도 충분합니다. \
             예전에 클라우드에서 옮겨 온 서버라서 그런지 궁금합니다. 로그 경로를 어디서 확인하나요?",
        )
        .await;
    let about = app
        .create_question(
            user,
            "클라우드 비용을 줄이는 방법",
            "클라우드 요금이 매달 늘어납니다. 클라우드 인스턴스를 예약하면 비용이 줄어드나요? \
             클라우드 스토리지 요금도 궁금합니다.",
        )
        .await;
    let some = app
        .create_question(
            user,
            "배포 자동화 질문",
            "클라우드에 배포를 자동화하려고 합니다. 클라우드 빌드와 클라우드 함수 중 무엇이 나은가요?",
        )
        .await;
    let particle = app
        .create_question(user, "질문", "클라우드를 처음 써 봅니다.")
        .await;
    app.wait_indexed().await;

    let (_, body) = app.get("/api/search?q=클라우드&sort=relevance").await;
    assert_eq!(body["total"], 4);
    assert_eq!(ids(&body), [about, some, particle, passing]);

    // The substring set is what LIKE gives: only the exact 클라우드를.
    let (_, exact) = app.get("/api/search?q=클라우드를&sort=relevance").await;
    assert_eq!(ids(&exact), [particle]);
    // match=morph widens it to every post about 클라우드, the exact one first.
    let (_, widened) = app
        .get("/api/search?q=클라우드를&sort=relevance&match=morph")
        .await;
    assert_eq!(widened["total"], 4);
    assert_eq!(ids(&widened), [particle, about, some, passing]);
    // Newest first, same set.
    let (_, recent) = app.get("/api/search?q=클라우드를&match=morph").await;
    assert_eq!(ids(&recent), [particle, some, about, passing]);

    let (status, bad) = app.get("/api/search?q=클라우드&match=fuzzy").await;
    assert_eq!(
        (status.as_u16(), &bad["error"]["code"]),
        (400, &"invalid_match".into())
    );
    app.finish().await;
}

async fn suggest(app: &crate::helpers::TestApp, q: &str) -> Vec<String> {
    let url = app.url("/api/suggest");
    let response = app.client.get(url).query(&[("q", q)]).send().await.unwrap();
    assert_eq!(response.status(), 200, "{q}");
    let body: Value = response.json().await.unwrap();
    body["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suggestions_complete_initials_half_syllables_and_latin_typing() {
    analyzer();
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    let user = app.create_user("u").await;
    for title in [
        "클라우드 비용 질문",
        "클라우드를 안전하게 설정하기",
        "클라우드 네트워크 구성",
        "클래스 상속 질문",
        "도커 이미지 크기",
    ] {
        app.create_question(user, title, "본문").await;
    }
    // Searched keywords count when they find something (here a review,
    // which has no title of its own).
    let question = app.create_question(user, "질문", "본문").await;
    app.create_review(question, user, "클라우드 네이티브로 옮겼습니다")
        .await;
    app.wait_indexed().await;
    // What people searched counts too: 클라우드 네이티브 is a completion.
    for _ in 0..3 {
        app.search("클라우드 네이티브", "").await;
    }
    app.state.search.trending.flush().await;
    app.state
        .search
        .suggester
        .refresh(&app.state.search.index, &app.state.search.trending)
        .await
        .unwrap();

    // Plain prefix, most popular first: 클라우드 is in 3 titles, the
    // searched phrase counts 1 client × 10.
    assert_eq!(
        suggest(&app, "클").await[..3],
        ["클라우드 네이티브", "클라우드", "클래스"]
    );
    // Half-typed syllables, 초성 and Latin-layout typing of 클라우드.
    for typed in ["클라ㅇ", "클랑", "ㅋㄹㅇㄷ", "zmffkdnem"] {
        assert_eq!(
            suggest(&app, typed).await,
            ["클라우드 네이티브", "클라우드"],
            "{typed}"
        );
    }
    assert_eq!(suggest(&app, "ㄷㅋ").await, ["도커"]);
    // Particles never become suggestions.
    assert!(!suggest(&app, "클라우드")
        .await
        .contains(&"클라우드를".to_owned()));
    for bad in ["", "%20", "클&limit=0", "클&limit=51"] {
        let (status, body) = app.get(&format!("/api/suggest?q={bad}")).await;
        assert_eq!(status, 400, "{bad}");
        assert!(body["error"]["code"].is_string());
    }
    app.finish().await;
}

/// A user dictionary (`chaja dict build --user`) keeps whole the words
/// mecab-ko-dic splits, and names itself in the analyzer's name, so that
/// generations built without it are told apart.
#[test]
fn a_user_dictionary_keeps_words_whole_that_mecab_ko_dic_splits() {
    let base = analyzer();
    let words = ["비급여", "쿠버네티스", "당근마켓"];
    let text = "비급여 항목과 쿠버네티스 설정, 당근마켓 거래";
    // Today: [급여, 항목, 쿠, 버네, 티스, 설정, 당근, 마켓, 거래].
    let before = base.morphemes(text);
    for w in words {
        assert!(
            !before.iter().any(|m| m == w),
            "mecab-ko-dic keeps {w} whole: {before:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let dictionary = dictionary_with_user_words(dir.path(), &words);
    let with_user = morph::Analyzer::load(&dictionary).unwrap();
    assert!(
        with_user.name().starts_with("ko-dic-3+user-"),
        "{}",
        with_user.name()
    );
    let after = with_user.morphemes(text);
    for w in words {
        assert!(after.iter().any(|m| m == w), "{w} in {after:?}");
    }
    // Rows too: a sentence the other analyzer has cached is analysed
    // again with this one's dictionary.
    let (mut base_row, mut user_row) = (String::new(), String::new());
    base.index_morphemes(text, &mut base_row);
    with_user.index_morphemes(text, &mut user_row);
    for w in words {
        assert!(!base_row.split(' ').any(|m| m == w), "{base_row:?}");
        assert!(user_row.split(' ').any(|m| m == w), "{w} in {user_row:?}");
    }
}

/// A first page that finds little offers what may have been meant, each
/// with its exact total, and never replaces the query: Latin-layout typing,
/// 초성, and a typo a keystroke away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn little_found_offers_did_you_mean_with_totals() {
    analyzer();
    let app = spawn_app_with(Store::Sqlite, |_| {}).await;
    let user = app.create_user("u").await;
    for title in ["클라우드 비용 질문", "클라우드 설정", "도커 이미지 크기"] {
        app.create_question(user, title, "본문").await;
    }
    app.wait_indexed().await;
    app.state
        .search
        .suggester
        .refresh(&app.state.search.index, &app.state.search.trending)
        .await
        .unwrap();
    let meant = |body: &Value| -> Vec<(String, u64)> {
        body["did_you_mean"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|d| {
                        (
                            d["q"].as_str().unwrap().to_owned(),
                            d["total"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for typed in ["zmffkdnem", "ㅋㄹㅇㄷ", "클라우두"] {
        let body = app.search(typed, "").await;
        assert_eq!(
            body["total"], 0,
            "{typed}: the query itself is searched as typed"
        );
        assert_eq!(
            meant(&body)[0],
            ("클라우드".to_owned(), 2),
            "{typed}: {body}"
        );
    }
    // Enough found: nothing offered.
    let body = app.search("클라우드", "").await;
    assert!(body.get("did_you_mean").is_none(), "{body}");
    // Nothing close: nothing offered.
    let body = app.search("전혀없는검색어", "").await;
    assert!(body.get("did_you_mean").is_none(), "{body}");
    app.finish().await;
}

/// Without a dictionary chaja runs on n-grams, says once how to add one,
/// and relevance still answers (on plain words).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_dictionary_search_runs_on_ngrams_and_says_how_to_add_one() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let port = free_port();
    let envs = [
        (
            "DATABASE_URL",
            format!("sqlite://{}/db?mode=rwc", dir.path().display()),
        ),
        (
            "CHAJA_INDEX_DIR",
            dir.path().join("index").display().to_string(),
        ),
        (
            "CHAJA_KO_DIC",
            dir.path().join("no-dictionary").display().to_string(),
        ),
        ("CHAJA_BIND", format!("127.0.0.1:{port}")),
    ];
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_logged(&envs, Some(log));
    let base = format!("http://127.0.0.1:{port}");
    wait_until_serving(&base).await;
    let client = crate::http_client::Client::new();
    let user: Value = client
        .post(format!("{base}/api/users"))
        .json(&serde_json::json!({"name": "u"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let question = serde_json::json!({
        "author_id": user["id"], "title": "클라우드 질문", "content": "클라우드를 씁니다"
    });
    let created = client
        .post(format!("{base}/api/questions"))
        .json(&question)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let mut body = Value::Null;
    let deadline = Instant::now() + Duration::from_secs(30);
    while body["total"] != 1 {
        assert!(Instant::now() < deadline, "the question was not indexed");
        body = client
            .get(format!("{base}/api/search"))
            .query(&[("q", "클라우드를"), ("sort", "relevance")])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    }
    drop(server);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(log.matches("no korean dictionary").count(), 1, "{log}");
    assert!(log.contains("chaja dict build"), "{log}");
}

/// The hand-judged relevance set (`tests/relevance/set.json`): 36 posts,
/// 35 queries with graded judgments. Mean nDCG@10 of `sort=relevance`, with
/// and without `match=morph`, for three analyzers: plain words (no
/// dictionary), mecab-ko-dic, and mecab-ko-dic with a user dictionary of
/// the loanwords it splits. Each runs in a real server of its own. Prints
/// the table docs/benchmarks/011-relevance-hand-judged-set.md records; fails if the dictionary stops helping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relevance_set_ndcg_with_and_without_the_dictionary() {
    let set: Value = serde_json::from_str(include_str!("../relevance/set.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A user dictionary beside the built one, for words mecab-ko-dic splits.
    let words = [
        "쿠버네티스",
        "인그레스",
        "엔진엑스",
        "코루틴",
        "라이프타임",
        "리베이스",
    ];
    let user_dic = dictionary_with_user_words(dir.path(), &words);

    let mut table = Vec::new();
    for (name, dictionary) in [
        ("words (no dictionary)", dir.path().join("none")),
        ("mecab-ko-dic", ko_dic()),
        ("mecab-ko-dic + user dictionary", user_dic.clone()),
    ] {
        let port = free_port();
        let data = dir.path().join(name.replace(' ', "-"));
        let _server = Server::start(&[
            (
                "DATABASE_URL",
                format!("sqlite:{}/chaja.db?mode=rwc", data.display()),
            ),
            ("CHAJA_INDEX_DIR", data.join("index").display().to_string()),
            ("CHAJA_BIND", format!("127.0.0.1:{port}")),
            ("CHAJA_KO_DIC", dictionary.display().to_string()),
        ]);
        let base = format!("http://127.0.0.1:{port}");
        wait_until_serving(&base).await;
        let client = crate::http_client::Client::new();
        let post =
            |path: &str, body: Value| client.post(format!("{base}{path}")).json(&body).send();
        let user: Value = post("/api/users", serde_json::json!({"name": "평가"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut by_row = std::collections::HashMap::new();
        for p in set["posts"].as_array().unwrap() {
            let created: Value = post(
                "/api/questions",
                serde_json::json!({"author_id": user["id"], "title": p["title"], "content": p["content"]}),
            )
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
            by_row.insert(
                created["id"].as_i64().unwrap(),
                p["id"].as_str().unwrap().to_owned(),
            );
        }
        let get = |url: String| {
            let request = client.get(url).send();
            async move { request.await.unwrap().json::<Value>().await.unwrap() }
        };
        let url =
            |q: &str, extra: &str| format!("{base}/api/search?q={}&size=10{extra}", urlencode(q));
        // Indexed once the last post is found by its own title.
        let last_title = set["posts"].as_array().unwrap().last().unwrap()["title"]
            .as_str()
            .unwrap()
            .to_owned();
        wait_until(
            Duration::from_secs(30),
            &format!("{name}: the set was never indexed"),
            || async { get(url(&format!("\"{last_title}\""), "")).await["total"] == 1 },
        )
        .await;
        let mut row = vec![name.to_owned()];
        for mode in ["&sort=relevance", "&sort=relevance&match=morph"] {
            let mut sum = 0.0;
            let queries = set["queries"].as_array().unwrap();
            for query in queries {
                let body = get(url(query["q"].as_str().unwrap(), mode)).await;
                let ranked: Vec<String> = body["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| by_row[&h["id"].as_i64().unwrap()].clone())
                    .collect();
                sum += ndcg_at_10(&ranked, &query["relevant"]);
            }
            row.push(format!("{:.3}", sum / queries.len() as f64));
        }
        table.push(row);
    }
    println!("| analyzer | sort=relevance | sort=relevance&match=morph |");
    println!("|---|---|---|");
    for row in &table {
        println!("| {} |", row.join(" | "));
    }
    let score = |r: usize, c: usize| table[r][c].parse::<f64>().unwrap();
    // Morphology with the dictionary finds what particles and endings hide.
    assert!(score(1, 2) > score(0, 2), "{table:?}");
    assert!(score(1, 2) >= 0.7, "{table:?}");
    assert!(score(2, 2) >= score(1, 2) - 0.01, "{table:?}");
}

/// nDCG@10 of a ranking against graded judgments (gain 2^grade − 1).
fn ndcg_at_10(ranked: &[String], relevant: &Value) -> f64 {
    let grade = |id: &str| relevant[id].as_f64().unwrap_or(0.0);
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, id)| (2f64.powf(grade(id)) - 1.0) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<f64> = relevant
        .as_object()
        .unwrap()
        .values()
        .map(|g| g.as_f64().unwrap())
        .collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, g)| (2f64.powf(*g) - 1.0) / (i as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 {
        0.0
    } else {
        dcg / idcg
    }
}

fn urlencode(s: &str) -> String {
    crate::helpers::urlencode(s)
}

/// A batch's rows are analysed together, apart from writing them (rounds
/// of 5 rows here, a text edit of each row): each row must be indexed
/// with its own morphemes, and an edit must replace them. A misaligned or
/// stale analysis finds the wrong row, or none.
async fn text_edits_replace_each_rows_morphemes(store: Store) {
    analyzer();
    let app = spawn_app_with(store, |a| a.mirror.indexer_batch = 5).await;
    let user = app.create_user("u").await;
    let before = [
        "사과",
        "바나나",
        "포도",
        "딸기",
        "수박",
        "참외",
        "복숭아",
        "자두",
        "체리",
        "망고",
        "기차",
        "버스",
        "택시",
        "비행기",
        "자전거",
        "트럭",
        "지하철",
        "오토바이",
        "하마",
        "기린",
    ];
    let after = [
        "책상",
        "의자",
        "침대",
        "옷장",
        "거울",
        "시계",
        "냉장고",
        "세탁기",
        "컴퓨터",
        "모니터",
        "고양이",
        "강아지",
        "토끼",
        "호랑이",
        "사자",
        "코끼리",
        "여우",
        "늑대",
        "곰",
        "낙타",
    ];
    let mut tx = app.db().pool.begin().await.unwrap();
    for (i, word) in before.iter().enumerate() {
        let sql = format!(
            "INSERT INTO questions (author_id, title, content) \
             VALUES ({user}, '앞읽기 {i}', '{word}를 샀습니다')"
        );
        sqlx::query(&sql).execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    app.wait_indexed().await;
    let mut ids = Vec::new();
    for word in before {
        let (_, body) = app.get(&format!("/api/search?q={word}&match=morph")).await;
        assert_eq!(body["total"], 1, "{word}: {body}");
        ids.push(body["hits"][0]["id"].as_i64().unwrap());
    }
    let mut tx = app.db().pool.begin().await.unwrap();
    for (id, word) in ids.iter().zip(after) {
        let sql = format!("UPDATE questions SET content = '{word}를 팔았습니다' WHERE id = {id}");
        sqlx::query(&sql).execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    app.wait_indexed().await;
    for ((id, old), new) in ids.iter().zip(before).zip(after) {
        let (_, body) = app.get(&format!("/api/search?q={new}&match=morph")).await;
        assert_eq!(body["total"], 1, "{new}: {body}");
        assert_eq!(body["hits"][0]["id"].as_i64(), Some(*id), "{new}: {body}");
        let (_, gone) = app.get(&format!("/api/search?q={old}&match=morph")).await;
        assert_eq!(gone["total"], 0, "{old}: {gone}");
    }
    app.finish().await;
}
