//! The index against a brute-force scan: for random rows, keywords, sorts,
//! filters and cursor walks, the hits and totals are exactly those of
//! `normalize(q) ⊂ normalize(title or content)`.

use proptest::prelude::*;
use unicode_normalization::UnicodeNormalization;

use chaja_core::model::{AttrValue, Doc, Key};
use chaja_core::sources::SourceId;
use chaja_core::text::{normalize, parse_query, row_matches, Keyword};
use chaja_index::search::{search_split, AttrOrder, Filter, NumberRange, Request, Sort};
use chaja_index::{create_generation_with_grams, Fourgrams, Generation, Trigrams};

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
        // NFKC makes these text with a space in it (` ̈`, ` ́`, `ア ゙`).
        "¨",
        "´",
        "ア゛",
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
        "¨",
        "´",
        "゛",
    ]);
    prop::collection::vec(pieces, 1..6).prop_map(|v| v.concat())
}

/// Every other distinct gram of `n` characters of the rows' normalized
/// texts, in sorted order: what `grams3` holds in place of the common
/// trigrams, or `grams4` with positions in place of the common 4-grams.
fn every_other_gram(docs: &[Doc], n: usize) -> Vec<String> {
    let mut all = std::collections::BTreeSet::new();
    for doc in docs {
        for text in doc.title.iter().chain(&doc.body) {
            let chars: Vec<char> = normalize(text).chars().collect();
            all.extend(chars.windows(n).map(|w| w.iter().collect::<String>()));
        }
    }
    all.into_iter().step_by(2).collect()
}

/// The rows in two commits (two segments, deletes in the first), then a
/// third that rewrites `changed` (rows whose attributes changed since).
fn build(
    docs: &[Doc],
    deleted: &[usize],
    changed: &[Doc],
    trigrams: &Trigrams,
    fourgrams: &Fourgrams,
) -> (tempfile::TempDir, Generation) {
    let dir = tempfile::tempdir().unwrap();
    let generation =
        create_generation_with_grams(dir.path(), &chaja_demo::sources(), trigrams, fourgrams)
            .unwrap();
    let mut writer = generation.writer(16 << 20).unwrap();
    // Two commits, so there are two segments and deletes in the first.
    let half = docs.len() / 2;
    for doc in &docs[..half] {
        writer.upsert(doc).unwrap();
    }
    writer.commit(1).unwrap();
    for doc in &docs[half..] {
        writer.upsert(doc).unwrap();
    }
    for &i in deleted {
        writer.delete(docs[i].source, &docs[i].key.text());
    }
    writer.commit(2).unwrap();
    // Their attributes alone changed: patches, as the indexer writes them.
    for doc in changed {
        writer.patch(doc).unwrap();
    }
    writer.commit(3).unwrap();
    generation.reload().unwrap();
    (dir, generation)
}

fn sort_strategy() -> impl Strategy<Value = Sort> {
    let by = |name: &str, descending| {
        Sort::Attribute(AttrOrder {
            name: name.to_owned(),
            descending,
        })
    };
    // Newest first three times as often: only it stops collecting early
    // and counts the rest apart, a path of its own to check.
    prop::sample::select(vec![
        Sort::Recent,
        Sort::Recent,
        Sort::Recent,
        Sort::Oldest,
        Sort::Relevance,
        by("like_count", true),
        by("like_count", false),
        by("rating", true),
        by("rating", false),
    ])
}

/// A row's number under `name`: questions have `like_count`, reviews
/// `rating`, each maybe NULL.
fn number(doc: &Doc, name: &str) -> Option<f64> {
    doc.attributes
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.number())
}

fn filter_strategy() -> impl Strategy<Value = Filter> {
    (
        prop::option::of(prop::sample::select(vec![0usize, 1])),
        prop::option::of(1i64..3),
        prop::option::of(0i64..10),
        prop::option::of(10i64..20),
        prop::option::of((
            prop::sample::select(vec!["like_count", "rating"]),
            prop::option::of(0i64..6),
            prop::option::of(0i64..6),
        )),
    )
        .prop_map(|(source, author_id, from, to, range)| Filter {
            source: source.map(SourceId::from_index),
            attributes: author_id
                .map(|a| vec![("author_id".to_owned(), a.to_string())])
                .unwrap_or_default(),
            from,
            to,
            ranges: range
                .map(|(name, gte, lte)| NumberRange {
                    name: name.to_owned(),
                    gte: gte.map(|v| v as f64),
                    lte: lte.map(|v| v as f64),
                })
                .into_iter()
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn search_equals_brute_force(
        rows in prop::collection::vec((text(), text(), 0i64..20, any::<bool>(), 1i64..3, prop::option::of(0i64..6)), 1..40),
        deleted in prop::collection::vec(0usize..40, 0..5),
        queries in prop::collection::vec((keyword(), prop::option::of(keyword())), 1..6),
        sort in sort_strategy(),
        filter in prop::option::of(filter_strategy()),
        size in 1usize..6,
        split in prop::sample::select(vec![4u32, 1 << 20]),
        // Without facets, a one-term keyword is counted from its postings
        // (with facets every match is visited, to count them too).
        with_facets in any::<bool>(),
        // `grams3` holds every trigram, or every other one of the rows'
        // (the rest are rare: found through their 4-grams and text ends).
        every_trigram in any::<bool>(),
        // `grams4` keeps positions for every 4-gram, or for every other
        // one of the rows' (a long keyword with another is checked against
        // the stored text).
        every_fourgram in any::<bool>(),
    ) {
        let docs: Vec<Doc> = rows
            .iter()
            .enumerate()
            .map(|(i, (title, content, at, is_review, author, value))| Doc {
                source: SourceId::from_index(usize::from(*is_review)),
                key: Key::Int(i as i64 + 1),
                // NFD, as macOS writes it, half the time.
                title: (!is_review).then(|| if i % 2 == 0 { title.nfd().collect() } else { title.clone() }),
                body: vec![content.clone()],
                created_at: *at,
                attributes: {
                    let value = value.map_or(AttrValue::Null, AttrValue::Int);
                    let mut a = vec![("author_id".to_owned(), AttrValue::Int(*author))];
                    if *is_review {
                        a.push(("question_id".to_owned(), AttrValue::Int(1)));
                        a.push(("rating".to_owned(), value));
                    } else {
                        a.push(("like_count".to_owned(), value));
                    }
                    a
                },
            })
            .collect();
        let deleted: Vec<usize> = deleted.into_iter().filter(|&i| i < docs.len()).collect();
        // Every third live row then changes its number (a like, a new
        // rating): the index must answer with the new values only.
        let original = docs.clone();
        let mut changed = Vec::new();
        let docs: Vec<Doc> = docs
            .into_iter()
            .enumerate()
            .map(|(i, mut doc)| {
                if i % 3 == 0 && !deleted.contains(&i) {
                    if let Some((_, value)) = doc.attributes.last_mut() {
                        *value = match value {
                            AttrValue::Int(n) => AttrValue::Int((*n + 2) % 6),
                            _ => AttrValue::Int(3),
                        };
                    }
                    changed.push(doc.clone());
                }
                doc
            })
            .collect();
        let trigrams = match every_trigram {
            true => Trigrams::every(),
            false => Trigrams::only(every_other_gram(&original, 3).iter().map(String::as_str)),
        };
        let fourgrams = match every_fourgram {
            true => Fourgrams::every(),
            false => Fourgrams::only(every_other_gram(&original, 4).iter().map(String::as_str)),
        };
        let (_dir, generation) = build(&original, &deleted, &changed, &trigrams, &fourgrams);
        let filter = filter.unwrap_or_default();
        // Random keywords seldom occur as three or more characters of a
        // row, so some are cut from the rows: the first, middle and last
        // trigram of a few bodies, where a rare one is found at a 4-gram's
        // start or at the text's end, and 5 and 7 characters there, which
        // a rare 4-gram may leave unpinned.
        let mut queries = queries;
        for doc in docs.iter().take(4) {
            let chars: Vec<char> = normalize(&doc.body[0]).chars().collect();
            for n in [3, 5, 7] {
                if chars.len() >= n {
                    for at in [0, (chars.len() - n) / 2, chars.len() - n] {
                        queries.push((chars[at..at + n].iter().collect(), None));
                    }
                }
            }
        }
        for (first, second) in &queries {
            let q = match second {
                Some(s) => format!("{first} {s}"),
                None => first.clone(),
            };
            let keywords = parse_query(&q);
            prop_assume!(!keywords.is_empty());
            // The oracle splits the query as typed, then normalizes each
            // word: normalized LIKE, word by word.
            let words: Vec<Keyword> = q.split_whitespace().map(|w| Keyword(normalize(w))).collect();
            let matched: Vec<&Doc> = docs
                .iter()
                .enumerate()
                .filter(|(i, _)| !deleted.contains(i))
                .map(|(_, d)| d)
                .filter(|d| row_matches(&words, d.title.as_deref().unwrap_or(""), &d.body[0]))
                .filter(|d| filter.source.is_none_or(|s| s == d.source))
                .filter(|d| {
                    filter.attributes.iter().all(|(_, a)| d.attributes[0].1 == AttrValue::Int(a.parse().unwrap()))
                })
                .filter(|d| filter.from.is_none_or(|f| d.created_at >= f))
                .filter(|d| filter.to.is_none_or(|t| d.created_at <= t))
                .filter(|d| {
                    filter.ranges.iter().all(|r| {
                        number(d, &r.name).is_some_and(|v| {
                            r.gte.is_none_or(|lo| v >= lo) && r.lte.is_none_or(|hi| v <= hi)
                        })
                    })
                })
                .collect();
            // GROUP BY rating over the matched rows, NULL left out.
            let mut facet: std::collections::BTreeMap<String, u64> = Default::default();
            for d in &matched {
                if let Some(v) = number(d, "rating") {
                    *facet.entry((v as i64).to_string()).or_default() += 1;
                }
            }
            // ORDER BY <attribute> (NULLs last), created_at DESC, key DESC.
            let by_attribute = |d: &Doc| match &sort {
                Sort::Attribute(order) => number(d, &order.name).map(|v| if order.descending { v } else { -v }),
                _ => None,
            };
            let mut ordered: Vec<&Doc> = matched.clone();
            ordered.sort_by(|a, b| {
                let (x, y) = (by_attribute(a), by_attribute(b));
                y.is_some()
                    .cmp(&x.is_some())
                    .then_with(|| y.unwrap_or(0.0).total_cmp(&x.unwrap_or(0.0)))
                    .then_with(|| {
                        let key = |d: &Doc| (d.created_at, chaja_index::uid(&d.key), chaja_index::tag(d.source, &d.key));
                        key(b).cmp(&key(a))
                    })
            });
            let mut expected: Vec<(i64, u64, u64)> = ordered
                .iter()
                .map(|d| (d.created_at, chaja_index::uid(&d.key), chaja_index::tag(d.source, &d.key)))
                .collect();
            if sort == Sort::Oldest {
                expected.reverse();
            }
            // Walk every page with cursors; the pages together are the set.
            let mut walked: Vec<(i64, u64, u64)> = Vec::new();
            let mut after = None;
            loop {
                let request = Request {
                    filter: filter.clone(),
                    sort: sort.clone(),
                    after,
                    facets: if with_facets { vec!["rating".to_owned()] } else { Vec::new() },
                    facet_size: 100,
                    ..Request::newest_first(keywords.clone(), size)
                };
                let response = search_split(&generation, &request, split).unwrap();
                prop_assert_eq!(response.total, expected.len() as u64, "total for {:?}", q);
                // Every facet count, on every page, is GROUP BY's.
                if with_facets {
                    let got: std::collections::BTreeMap<String, u64> =
                        response.facets[0].values.iter().cloned().collect();
                    prop_assert_eq!(&got, &facet, "rating facet for {:?}", q);
                    prop_assert_eq!(response.facets[0].distinct, facet.len() as u64);
                    // When every matched row has one rating, the counts sum
                    // to the total.
                    if matched.iter().all(|d| number(d, "rating").is_some()) {
                        prop_assert_eq!(got.values().sum::<u64>(), response.total);
                    }
                } else {
                    prop_assert!(response.facets.is_empty());
                }
                // By source: the tag's low bits.
                let reviews = expected.iter().filter(|(_, _, tag)| chaja_index::tag_source(*tag) == 1).count() as u64;
                prop_assert_eq!(
                    &response.by_source[..2],
                    &[expected.len() as u64 - reviews, reviews][..],
                    "totals by source for {:?}",
                    q
                );
                prop_assert!(response.hits.len() <= size);
                walked.extend(response.hits.iter().map(|h| (h.created_at, chaja_index::uid(&h.key), chaja_index::tag(h.source, &h.key))));
                match response.hits.last() {
                    Some(last) if response.hits.len() == size => after = Some(last.rank),
                    _ => break,
                }
                prop_assert!(walked.len() <= expected.len(), "cursor walk repeats for {:?}", q);
            }
            if sort == Sort::Relevance {
                // Same set; the order is BM25's.
                let mut got = walked.clone();
                got.sort_unstable();
                let mut want = expected.clone();
                want.sort_unstable();
                prop_assert_eq!(got, want, "hits for {:?}", q);
            } else {
                prop_assert_eq!(walked, expected, "hits for {:?}", q);
            }
        }
    }
}
