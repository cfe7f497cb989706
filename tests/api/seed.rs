//! `chaja seed`: the same rows for the same seed, any row regenerated
//! alone, Zipf likes, and a keyword manifest whose counts are exact.

use chaja_demo::seed::{seed, Generator, TextSource};

use crate::helpers::{spawn_app, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_row_is_regenerated_alone_and_the_manifest_counts_are_exact() {
    let app = spawn_app(Store::Sqlite).await;
    let text = TextSource::Builtin;
    let seeded = seed(app.db(), 300, 42, &text, false).await.unwrap();
    assert_eq!(seeded.questions, 300);
    assert!(seeded.reviews > 300, "about two reviews per question");

    // Question 123 alone, from the seed and its index.
    let generator = Generator {
        seed: 42,
        rows: 300,
        users: seeded.users,
        first_user: 1,
        start: 1_700_000_000_000,
        text: &text,
    };
    let alone = generator.question(123);
    let row: (i64, String, String, i64) = sqlx::query_as(
        "SELECT author_id, title, content, created_at FROM questions WHERE id = 124",
    )
    .fetch_one(&app.db().pool)
    .await
    .unwrap();
    assert_eq!(
        row,
        (
            alone.author,
            alone.title.clone(),
            alone.content.clone(),
            alone.created_at
        )
    );
    let likes: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM question_likes WHERE question_id = 124")
            .fetch_one(&app.db().pool)
            .await
            .unwrap();
    assert_eq!(likes as u64, alone.likes);

    // Zipf: most questions have no like, a few have many.
    let liked: Vec<i64> = sqlx::query_scalar("SELECT like_count FROM question_stats")
        .fetch_all(&app.db().pool)
        .await
        .unwrap();
    assert!(liked.len() < 150, "{} of 300 liked", liked.len());
    assert!(liked.iter().any(|&n| n >= 3), "{liked:?}");
    assert_eq!(liked.iter().sum::<i64>() as u64, seeded.likes);

    // Every manifest count is what a search returns, and what LIKE counts
    // (SQLite's LIKE folds ASCII case; `%` and `_` would be wildcards).
    app.wait_indexed().await;
    let manifest = &seeded.manifest;
    assert_eq!(manifest.rows, seeded.questions + seeded.reviews);
    for class in [
        "1 char >80%",
        "2 chars ~10%",
        "4+ chars 1 row",
        "Latin/code ~1%",
    ] {
        assert!(
            manifest.classes.contains_key(class),
            "{class} missing: {manifest:?}"
        );
    }
    for (class, words) in &manifest.classes {
        for word in words {
            let total = app.search(&word.keyword, "&size=1").await["total"].as_u64();
            assert_eq!(total, Some(word.rows), "{class}: {}", word.keyword);
            if word.keyword.contains(['%', '_']) {
                continue;
            }
            let like = format!("%{}%", word.keyword);
            let rows: i64 = sqlx::query_scalar(
                "SELECT (SELECT COUNT(*) FROM questions WHERE title LIKE ? OR content LIKE ?) \
                 + (SELECT COUNT(*) FROM reviews WHERE content LIKE ?)",
            )
            .bind(&like)
            .bind(&like)
            .bind(&like)
            .fetch_one(&app.db().pool)
            .await
            .unwrap();
            assert_eq!(rows as u64, word.rows, "LIKE for {class}: {}", word.keyword);
        }
    }
    app.finish().await;
}
