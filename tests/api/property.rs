//! The index against a brute-force scan: for random rows and keywords, the
//! hits and totals are exactly those of `normalize(q) ⊂ normalize(text)`.

use proptest::prelude::*;
use unicode_normalization::UnicodeNormalization;

use chaja::index::search::{search, Filter, Request};
use chaja::index::{create_generation, Generation};
use chaja::model::{Doc, Kind};
use chaja::text::{parse_query, row_matches};

/// Small alphabets so that random keywords actually occur.
fn text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "가",
        "나",
        "다",
        "한",
        "글",
        "스프링",
        "부트",
        " ",
        "  ",
        "A",
        "a",
        "B",
        "b",
        "Ｂ",
        "1",
        "2",
        "%",
        "_",
        "😀",
        "\u{1100}\u{1161}",
        "\u{1112}\u{1161}\u{11AB}",
        "é",
        "e\u{301}",
        "ﬁ",
        "\n",
    ]);
    prop::collection::vec(pieces, 0..30).prop_map(|v| v.concat())
}

fn keyword() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "가",
        "나",
        "다",
        "한",
        "글",
        "스프",
        "링",
        "부",
        "A",
        "b",
        "Ｂ",
        "1",
        "%",
        "_",
        "😀",
        "\u{1100}\u{1161}",
        "\u{1112}\u{1161}",
        "é",
        "fi",
    ]);
    prop::collection::vec(pieces, 1..5).prop_map(|v| v.concat())
}

fn build(docs: &[Doc]) -> (tempfile::TempDir, Generation) {
    let dir = tempfile::tempdir().unwrap();
    let (generation, mut writer) = create_generation(dir.path(), 16 << 20).unwrap();
    for doc in docs {
        writer.upsert(doc).unwrap();
    }
    writer.commit(1).unwrap();
    generation.reader.reload().unwrap();
    (dir, generation)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn search_equals_brute_force(
        rows in prop::collection::vec((text(), text(), 0i64..20, any::<bool>()), 1..40),
        queries in prop::collection::vec((keyword(), prop::option::of(keyword())), 1..8),
        size in 1usize..8,
    ) {
        let docs: Vec<Doc> = rows
            .iter()
            .enumerate()
            .map(|(i, (title, content, at, is_review))| Doc {
                kind: if *is_review { Kind::Review } else { Kind::Question },
                id: i as i64 + 1,
                author_id: 1,
                question_id: is_review.then_some(1),
                // NFD, as macOS writes it, half the time.
                title: (!is_review).then(|| if i % 2 == 0 { title.nfd().collect() } else { title.clone() }),
                content: content.clone(),
                created_at: *at,
                updated_at: *at,
            })
            .collect();
        let (_dir, generation) = build(&docs);
        for (first, second) in &queries {
            let q = match second {
                Some(s) => format!("{first} {s}"),
                None => first.clone(),
            };
            let keywords = parse_query(&q);
            prop_assume!(!keywords.is_empty());
            let mut expected: Vec<(i64, u64)> = docs
                .iter()
                .filter(|d| row_matches(&keywords, d.title.as_deref().unwrap_or(""), &d.content))
                .map(|d| (d.created_at, d.kind.uid(d.id)))
                .collect();
            expected.sort_unstable_by(|a, b| b.cmp(a));
            let request = Request {
                keywords: keywords.clone(),
                filter: Filter::default(),
                offset: 0,
                limit: size,
                after: None,
            };
            let response = search(&generation, &request).unwrap();
            prop_assert_eq!(response.total, expected.len() as u64, "total for {:?}", q);
            let got: Vec<(i64, u64)> = response.hits.iter().map(|h| (h.key.created_at, h.key.uid)).collect();
            let want: Vec<(i64, u64)> = expected.iter().copied().take(size).collect();
            prop_assert_eq!(got, want, "hits for {:?}", q);
        }
    }
}
