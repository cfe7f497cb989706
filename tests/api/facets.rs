//! Facets, numeric ranges and sorting by an attribute, on a review site's
//! own table, compared with SQL over the same rows: `GROUP BY`, `BETWEEN`
//! and `ORDER BY … LIMIT`, before and after rows change and are
//! soft-deleted.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::Row;

use crate::both_stores;
use crate::fixtures::review;
use crate::helpers::{spawn_app_on_schema, Store, TestApp};
use crate::http_client::StatusCode;

both_stores!(
    facets_ranges_and_attribute_sorts_equal_sql,
    bad_facet_range_and_sort_parameters_get_400,
    a_numeric_attribute_that_holds_no_number_is_missing_not_a_failure,
);

const WORDS: [&str; 4] = ["배송", "포장", "가격", "품질"];
const CATEGORIES: [&str; 3] = ["의류", "가전", "식품"];

/// 90 reviews: ratings 1–5 (some NULL), like counts with many ties,
/// categories (some NULL), and bodies holding some of the words.
async fn fill(app: &TestApp) {
    let mut values = Vec::new();
    for i in 0..90u64 {
        let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        let rating = match h % 11 {
            0 => "NULL".to_owned(),
            r => (1 + r % 5).to_string(),
        };
        let category = match (h >> 4) % 4 {
            3 => "NULL".to_owned(),
            c => format!("'{}'", CATEGORIES[c as usize]),
        };
        let words: Vec<&str> = WORDS
            .iter()
            .enumerate()
            .filter(|(w, _)| (h >> (8 + w)) & 1 == 1 || (i as usize) % 4 == *w)
            .map(|(_, w)| *w)
            .collect();
        values.push(format!(
            "({}, {rating}, {}, {category}, '후기 {}', '2025-04-{:02} {:02}:{:02}:00.000000')",
            1 + i % 7,
            (h >> 12) % 6,
            words.join(" "),
            1 + i % 28,
            i % 24,
            i % 60,
        ));
    }
    app.sql(&format!(
        "INSERT INTO review (product_id, rating, like_count, category, body, created_at) VALUES {}",
        values.join(", ")
    ))
    .await;
}

/// The rows the search must see: visible and holding `word`.
fn visible(word: &str) -> String {
    format!("deleted_at IS NULL AND body LIKE '%{word}%'")
}

async fn sql_counts(app: &TestApp, column: &str, word: &str) -> BTreeMap<String, u64> {
    let rows = sqlx::query(&format!(
        "SELECT CAST({column} AS CHAR), COUNT(*) FROM review WHERE {} AND {column} IS NOT NULL GROUP BY {column}",
        visible(word)
    ))
    .fetch_all(&app.db().pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as u64))
        .collect()
}

async fn sql_ids(app: &TestApp, condition: &str, order: &str) -> Vec<i64> {
    let rows = sqlx::query(&format!(
        "SELECT id FROM review WHERE {condition} ORDER BY {order}"
    ))
    .fetch_all(&app.db().pool)
    .await
    .unwrap();
    rows.iter().map(|r| r.get::<i64, _>(0)).collect()
}

fn facet(body: &Value, name: &str) -> BTreeMap<String, u64> {
    body["facets"][name]["values"]
        .as_object()
        .unwrap_or_else(|| panic!("no facet {name}: {body}"))
        .iter()
        .map(|(v, n)| (v.clone(), n.as_u64().unwrap()))
        .collect()
}

fn ids(body: &Value) -> Vec<i64> {
    body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_i64().unwrap())
        .collect()
}

/// Every page of `extra` by cursor, as ids.
async fn walk(app: &TestApp, word: &str, extra: &str) -> Vec<i64> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let more = match &cursor {
            Some(c) => format!("{extra}&size=7&cursor={c}"),
            None => format!("{extra}&size=7"),
        };
        let body = app.search(word, &more).await;
        all.extend(ids(&body));
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return all,
        }
        assert!(all.len() < 200, "the walk does not end");
    }
}

async fn check_against_sql(app: &TestApp, step: &str) {
    app.wait_indexed().await;
    for word in WORDS {
        // Facets: GROUP BY, over the whole matched set, on every page.
        let body = app
            .search(word, "&facets=rating,category&facet_size=100&size=3")
            .await;
        let total = body["total"].as_u64().unwrap();
        let ratings = sql_counts(app, "rating", word).await;
        assert_eq!(facet(&body, "rating"), ratings, "{step}: {word} rating");
        assert_eq!(
            body["facets"]["rating"]["distinct"],
            ratings.len() as u64,
            "{step}"
        );
        assert_eq!(
            facet(&body, "category"),
            sql_counts(app, "category", word).await,
            "{step}: {word} category"
        );
        // The top values by count, the rest left out but counted.
        let top = app.search(word, "&facets=rating&facet_size=2").await;
        let shown = top["facets"]["rating"]["values"].as_object().unwrap();
        assert!(shown.len() <= 2, "{top}");
        assert_eq!(top["facets"]["rating"]["distinct"], ratings.len() as u64);
        let mut counts: Vec<u64> = ratings.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let mut shown_counts: Vec<u64> = shown.values().map(|n| n.as_u64().unwrap()).collect();
        shown_counts.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(shown_counts, counts[..counts.len().min(2)], "{step}: {top}");
        // Ranges: BETWEEN, with the keyword, and with a facet after it.
        let want = sql_ids(
            app,
            &format!("{} AND rating BETWEEN 4 AND 5", visible(word)),
            "created_at DESC, id DESC",
        )
        .await;
        let ranged = walk(app, word, "&attr.rating.gte=4&attr.rating.lte=5").await;
        assert_eq!(ranged, want, "{step}: {word} rating 4–5");
        let body = app.search(word, "&attr.rating.gte=4&facets=rating").await;
        assert_eq!(body["total"], want.len() as u64, "{step}: {body}");
        assert!(facet(&body, "rating").keys().all(|v| v == "4" || v == "5"));
        let at_most = sql_ids(
            app,
            &format!("{} AND rating <= 2", visible(word)),
            "created_at DESC, id DESC",
        )
        .await;
        assert_eq!(
            walk(app, word, "&attr.rating.lte=2").await,
            at_most,
            "{step}: {word} rating ≤ 2"
        );
        // Sorting by an attribute: ORDER BY … LIMIT, ties newest first,
        // every page by cursor.
        for (direction, order) in [("desc", "like_count DESC"), ("asc", "like_count ASC")] {
            let want = sql_ids(
                app,
                &visible(word),
                &format!("{order}, created_at DESC, id DESC"),
            )
            .await;
            let got = walk(app, word, &format!("&sort=attr.like_count.{direction}")).await;
            assert_eq!(got, want, "{step}: {word} by like_count {direction}");
            let first = app
                .search(word, &format!("&sort=attr.like_count.{direction}&size=5"))
                .await;
            assert_eq!(ids(&first), want[..want.len().min(5)], "{step}");
        }
        assert!(total > 0, "{step}: {word} matches nothing");
    }
}

async fn facets_ranges_and_attribute_sorts_equal_sql(store: Store) {
    let app = spawn_app_on_schema(store, review::schema(store), review::CONFIG).await;
    fill(&app).await;
    check_against_sql(&app, "seeded").await;

    // A hit shows an integer rating as the database does.
    let body = app.search("배송", "&facets=rating").await;
    assert!(
        facet(&body, "rating").keys().all(|v| !v.contains('.')),
        "{body}"
    );

    // Rows change: ratings, likes, categories, text; some are
    // soft-deleted, one comes back.
    app.sql("UPDATE review SET rating = 5 WHERE id % 5 = 0")
        .await;
    app.sql("UPDATE review SET like_count = like_count + 3 WHERE id % 3 = 0")
        .await;
    app.sql("UPDATE review SET category = NULL WHERE id % 7 = 1")
        .await;
    app.sql("UPDATE review SET rating = NULL WHERE id % 13 = 2")
        .await;
    app.sql("UPDATE review SET body = '후기 배송 포장' WHERE id % 11 = 4")
        .await;
    app.sql("UPDATE review SET deleted_at = created_at WHERE id % 6 = 1")
        .await;
    check_against_sql(&app, "changed").await;
    app.sql("UPDATE review SET deleted_at = NULL WHERE id = 7")
        .await;
    app.sql("DELETE FROM review WHERE id % 17 = 3").await;
    check_against_sql(&app, "deleted and restored").await;

    // A rebuild reads the same values back.
    app.reindex().await.unwrap();
    check_against_sql(&app, "rebuilt").await;
    app.finish().await;
}

async fn bad_facet_range_and_sort_parameters_get_400(store: Store) {
    let app = spawn_app_on_schema(store, review::schema(store), review::CONFIG).await;
    for (extra, code) in [
        ("&facets=product_id", "invalid_facet"),
        ("&facets=nope", "invalid_facet"),
        ("&facets=rating,", "invalid_facet"),
        ("&facets=rating&facet_size=0", "invalid_facet_size"),
        ("&facets=rating&facet_size=101", "invalid_facet_size"),
        ("&attr.category.gte=1", "invalid_range"),
        ("&attr.rating.gte=abc", "invalid_range"),
        ("&attr.rating.gte=NaN", "invalid_range"),
        ("&attr.rating.gte=inf", "invalid_range"),
        ("&attr.rating.gte=5&attr.rating.lte=4", "invalid_range"),
        ("&attr.rating.gte=1&attr.rating.gte=2", "invalid_range"),
        ("&sort=attr.rating.desc", "invalid_sort"),
        ("&sort=attr.nope.asc", "invalid_sort"),
    ] {
        let (status, body) = app
            .get(&format!("/api/search?q=%EB%B0%B0%EC%86%A1{extra}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}: {body}");
        assert_eq!(body["error"]["code"], code, "{extra}: {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    for extra in [
        "&sort=attr.like_count",
        "&sort=attr.like_count.up",
        "&sort=attr..desc",
        "&facet_size=x",
    ] {
        let (status, body) = app
            .get(&format!("/api/search?q=%EB%B0%B0%EC%86%A1{extra}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}: {body}");
        assert!(body["error"]["code"].is_string(), "{body}");
    }
    app.finish().await;
}

/// `category` is text; declared numeric, a value that reads as a number is
/// one and any other is missing: the row is indexed and found, matches no
/// range, and sorts last.
async fn a_numeric_attribute_that_holds_no_number_is_missing_not_a_failure(store: Store) {
    let config = review::CONFIG
        .replace(
            "numeric = [\"rating\"]",
            "numeric = [\"rating\", \"category\"]",
        )
        .replace(
            "sortable = [\"like_count\"]",
            "sortable = [\"like_count\", \"category\"]",
        );
    let app = spawn_app_on_schema(store, review::schema(store), &config).await;
    app.sql(
        "INSERT INTO review (product_id, rating, like_count, category, body, created_at) VALUES \
         (1, 5, 0, '3', '배송 하나', '2025-04-01 10:00:00.000000'), \
         (1, 5, 0, 'abc', '배송 둘', '2025-04-02 10:00:00.000000'), \
         (1, 5, 0, '4.5', '배송 셋', '2025-04-03 10:00:00.000000'), \
         (1, 5, 0, NULL, '배송 넷', '2025-04-04 10:00:00.000000')",
    )
    .await;
    app.wait_indexed().await;
    assert_eq!(app.search("배송", "").await["total"], 4);
    let ranged = app.search("배송", "&attr.category.gte=3").await;
    assert_eq!(ids(&ranged), [3, 1], "{ranged}");
    let sorted = app.search("배송", "&sort=attr.category.desc").await;
    // 4.5, 3, then the rows without a number, newest first.
    assert_eq!(ids(&sorted), [3, 1, 4, 2], "{sorted}");
    app.finish().await;
}
