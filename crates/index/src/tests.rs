//! Writing, opening and refusing generations.

use std::path::Path;

use tantivy::Index;

use chaja_core::model::Doc;
use chaja_core::sources::{SourceId, Sources};

use crate::generation::{generation_path, generation_stamp, SOURCES_FILE};
use crate::schema::build_schema;
use crate::*;

fn doc(id: i64, version: i64) -> Doc {
    Doc {
        source: SourceId::from_index(0),
        key: chaja_core::model::Key::Int(id),
        title: Some(format!("제목 {id}")),
        body: vec![format!("본문 {version}")],
        created_at: 1_000 + id,
        attributes: vec![("author_id".to_owned(), chaja_core::model::AttrValue::Int(1))],
    }
}

/// Upserts replace: after many rounds of overlapping upserts with
/// commits in between, every row is in the index exactly once.
#[test]
fn upserts_never_leave_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    let mut version = 0;
    for round in 0..150i64 {
        for i in 0..40i64 {
            let id = (i * 7 + round * 13) % 500;
            version += 1;
            writer.upsert(&doc(id, version)).unwrap();
        }
        writer.commit(round).unwrap();
    }
    // Merges run in the background: let them finish, then look.
    writer.wait_merging_threads().unwrap();
    generation.reload().unwrap();
    let duplicates = generation.duplicate_keys().unwrap();
    assert!(duplicates.is_empty(), "duplicated keys: {duplicates:?}");
    assert_eq!(generation.num_docs(), 500);
}

/// Rows indexed twice are found, integer and string keys alike, in one
/// segment or across two; two sources that share an integer key are not
/// a duplicate.
#[test]
fn rows_indexed_twice_are_found_and_shared_keys_of_two_sources_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    let row = |source: usize, key: chaja_core::model::Key| Doc {
        source: SourceId::from_index(source),
        key,
        ..doc(0, 0)
    };
    let int = chaja_core::model::Key::Int;
    let text = |s: &str| chaja_core::model::Key::Str(s.to_owned());
    for i in 0..50 {
        writer.add(&row(0, int(i)), Morphemes::default()).unwrap();
        writer.add(&row(1, int(i)), Morphemes::default()).unwrap();
    }
    writer.add(&row(1, int(7)), Morphemes::default()).unwrap();
    writer
        .add(&row(0, text("가")), Morphemes::default())
        .unwrap();
    writer.commit(1).unwrap();
    writer
        .add(&row(0, text("가")), Morphemes::default())
        .unwrap();
    writer
        .add(&row(1, text("가")), Morphemes::default())
        .unwrap();
    writer.add(&row(0, int(3)), Morphemes::default()).unwrap();
    writer.commit(2).unwrap();
    // A segment that holds no candidate.
    writer.add(&row(0, int(100)), Morphemes::default()).unwrap();
    writer.commit(3).unwrap();
    generation.reload().unwrap();
    assert_eq!(
        generation.duplicate_keys().unwrap(),
        vec!["0:3".to_owned(), "0:가".to_owned(), "1:7".to_owned()]
    );
}

/// An index built for other sources is refused with a message that
/// says what to run: documents store their source's position, so
/// reading them under another list would mislabel every hit.
#[test]
fn an_index_of_other_sources_says_to_reindex() {
    let dir = tempfile::tempdir().unwrap();
    SearchIndex::open_or_create(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let renamed = chaja_core::sources::ConfigFile::parse(
        "[[source]]\nname = \"post\"\ntable = \"questions\"\nid = \"id\"\ncreated_at = \"created_at\"\nfields = [\"title\", \"content\"]",
    )
    .unwrap();
    let err = refusal(
        dir.path(),
        renamed.sources.as_ref().unwrap(),
        "another list of sources is refused",
    );
    assert!(
        err.contains("chaja reindex") && err.contains("post"),
        "{err}"
    );
    SearchIndex::open_or_create(dir.path(), &chaja_core::sources::for_tests()).unwrap();

    // `chaja reindex` under the new config: its rebuild is served.
    let renamed = renamed.sources.as_ref().unwrap();
    let rebuilt = create_generation(dir.path(), renamed).unwrap();
    rebuilt.writer(16 << 20).unwrap().commit(0).unwrap();
    publish(dir.path(), rebuilt.id).unwrap();
    drop(rebuilt);
    assert!(SearchIndex::open_or_create(dir.path(), renamed).is_err());
    let index = SearchIndex::open_for_serving(dir.path(), renamed).unwrap();
    assert_eq!(index.live().id, 2);
}

/// A generation written by a version with other fields (here: one
/// without `grams3`) is refused with the way out, and the server serves
/// its rebuild in this version's layout.
#[test]
fn an_index_of_another_layout_says_to_reindex() {
    let dir = tempfile::tempdir().unwrap();
    let sources = chaja_core::sources::for_tests();
    old_generation(dir.path(), &sources, |entry, schema| {
        if entry.name() != "grams3" {
            schema.add_field(entry);
        }
    });
    let err = refusal(dir.path(), &sources, "another layout is refused");
    assert!(err.contains("chaja reindex"), "{err}");

    let rebuilt = create_generation(dir.path(), &sources).unwrap();
    rebuilt.writer(16 << 20).unwrap().commit(0).unwrap();
    publish(dir.path(), rebuilt.id).unwrap();
    drop(rebuilt);
    let index = SearchIndex::open_for_serving(dir.path(), &sources).unwrap();
    assert_eq!(index.live().id, 2);
    drop(index);

    // The same schema without the layout line (what an older version
    // wrote) is refused too.
    std::fs::write(
        generation_path(dir.path(), 2).join(SOURCES_FILE),
        sources.stamp(),
    )
    .unwrap();
    let err = refusal(
        dir.path(),
        &sources,
        "a stamp without the layout line is refused",
    );
    assert!(
        err.contains("chaja reindex") && err.contains("another layout"),
        "{err}"
    );
}

/// A generation of the layout before bodies were stored as bytes (its
/// `content` a stored text) is refused with the way out: this version
/// reads a body as bytes, and would find none there.
#[test]
fn an_index_whose_bodies_are_stored_as_text_says_to_reindex() {
    let dir = tempfile::tempdir().unwrap();
    let sources = chaja_core::sources::for_tests();
    old_generation(dir.path(), &sources, |entry, schema| {
        if entry.name() == "content" {
            schema.add_text_field("content", tantivy::schema::STORED);
        } else {
            schema.add_field(entry);
        }
    });
    let err = refusal(dir.path(), &sources, "bodies stored as text are refused");
    assert!(err.contains("chaja reindex"), "{err}");
}

/// Makes generation 1 under `root` the current one, an empty index of
/// this version's stamps but of the schema that `edit` builds from this
/// version's fields, one field at a time: what an older version wrote.
fn old_generation(
    root: &Path,
    sources: &Sources,
    edit: impl Fn(tantivy::schema::FieldEntry, &mut tantivy::schema::SchemaBuilder),
) {
    let old = generation_path(root, 1);
    std::fs::create_dir_all(&old).unwrap();
    let mut schema = tantivy::schema::Schema::builder();
    for (_, entry) in build_schema().fields() {
        edit(entry.clone(), &mut schema);
    }
    Index::create_in_dir(&old, schema.build()).unwrap();
    std::fs::write(old.join(SOURCES_FILE), generation_stamp(sources)).unwrap();
    make_current(root, 1).unwrap();
}

/// Why opening the index under `root` for `sources` fails; `why` says
/// what should have made it fail.
fn refusal(root: &Path, sources: &Sources, why: &str) -> String {
    SearchIndex::open_or_create(root, sources)
        .err()
        .expect(why)
        .to_string()
}

/// A fixed xorshift sequence from its seed: test rows that are the same
/// every run, without a random crate in the index's tests.
pub(crate) struct Draws(pub(crate) u64);

impl Draws {
    /// The next draw, below `n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// An index holding one row of this title and these body fields.
fn one_row(title: Option<&str>, body: &[&str]) -> (tempfile::TempDir, Generation) {
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    let mut d = doc(1, 1);
    d.title = title.map(str::to_owned);
    d.body = body.iter().map(|b| b.to_string()).collect();
    writer.upsert(&d).unwrap();
    writer.commit(1).unwrap();
    generation.reload().unwrap();
    (dir, generation)
}

/// The total of query `q`.
fn total_of(generation: &Generation, q: &str) -> u64 {
    use crate::search::{search, Request};
    let request = Request::newest_first(chaja_core::text::parse_query(q), 1);
    search(generation, &request).unwrap().total
}

/// A keyword never matches across two body fields, as `LIKE` on each
/// column would not: `스프링` ends one field and `링부트` starts the next.
#[test]
fn no_match_spans_two_body_fields() {
    let (_dir, generation) = one_row(None, &["설정 스프링", "링부트 끝"]);
    let total = |q: &str| total_of(&generation, q);
    assert_eq!(total("스프링"), 1);
    assert_eq!(total("링부트"), 1);
    for across in ["스프링부트", "링링", "링링부", "정 스프링링부트"] {
        assert_eq!(total(across), 0, "{across}");
    }
}

/// Nor across the title and the first body field, which the gram
/// fields index as one value; each keyword class (1–4 characters as
/// one term, longer as a phrase) finds what each field holds, at
/// either end.
#[test]
fn no_match_spans_title_and_body() {
    let (_dir, generation) = one_row(Some("스프링"), &["부트 설정법"]);
    let total = |q: &str| total_of(&generation, q);
    for within in [
        "스",
        "링",
        "스프",
        "스프링",
        "부트",
        "부트 설",
        "부트 설정",
        "부트 설정법",
        "정법",
    ] {
        assert_eq!(total(within), 1, "{within}");
    }
    for across in [
        "링부",
        "링부트",
        "프링부트",
        "스프링부트",
        "\"스프링 부트\"",
        "\"링 부\"",
    ] {
        assert_eq!(total(across), 0, "{across}");
    }
}

/// Per-segment totals are reused only while the segment's deletes stay
/// the same: after a delete the total is counted again.
#[test]
fn cached_segment_totals_follow_deletes() {
    use crate::search::{search, Request};
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    for id in 1..=5 {
        let mut d = doc(id, 1);
        d.body = vec!["설정을 바꿨습니다".to_owned()];
        writer.upsert(&d).unwrap();
    }
    writer.commit(1).unwrap();
    generation.reload().unwrap();
    let request = Request::newest_first(chaja_core::text::parse_query("바꿨습니다"), 2);
    assert_eq!(search(&generation, &request).unwrap().total, 5);
    generation.caches.totals.run_pending_tasks();
    let segments = generation.reader.searcher().segment_readers().len() as u64;
    assert_eq!(
        generation.caches.totals.entry_count(),
        segments,
        "one total per segment"
    );
    assert_eq!(search(&generation, &request).unwrap().total, 5);
    writer.delete(SourceId::from_index(0), "3");
    writer.commit(2).unwrap();
    generation.reload().unwrap();
    let response = search(&generation, &request).unwrap();
    assert_eq!(response.total, 4);
    assert_eq!(
        response
            .hits
            .iter()
            .map(|h| h.key.clone())
            .collect::<Vec<_>>(),
        [
            chaja_core::model::Key::Int(5),
            chaja_core::model::Key::Int(4)
        ]
    );
}

/// A rebuild's cleanup and a swap, interleaved at the worst moment: the
/// swap of the published generation lands between the cleanup's reads of
/// `NEXT` and `CURRENT`. The generation that just went live survives.
/// (With `CURRENT` read first, the cleanup saw the old `CURRENT`, then no
/// `NEXT`, and deleted the new live generation.)
#[test]
fn a_swap_during_the_cleanup_of_a_rebuild_keeps_the_new_live_generation() {
    let dir = tempfile::tempdir().unwrap();
    let sources = chaja_core::sources::for_tests();
    SearchIndex::open_or_create(dir.path(), &sources).unwrap();
    let rebuilt = create_generation(dir.path(), &sources).unwrap();
    rebuilt.writer(16 << 20).unwrap().commit(0).unwrap();
    publish(dir.path(), rebuilt.id).unwrap();
    let lock = try_lock_rebuild(dir.path())
        .unwrap()
        .expect("no rebuild runs");
    crate::disk::remove_unpublished_reading(dir.path(), &lock, || {
        make_current(dir.path(), rebuilt.id).unwrap();
    })
    .unwrap();
    assert!(
        generation_path(dir.path(), rebuilt.id).exists(),
        "the live generation was removed"
    );
    let live = SearchIndex::open_or_create(dir.path(), &sources).unwrap();
    assert_eq!(live.live().id, rebuilt.id);
}

/// A published rebuild is sealed: the serving writer opened on it leaves
/// its ten alike segments unmerged through a commit, where tantivy's log
/// policy would merge them whole (see `merges`).
#[test]
fn a_published_rebuild_keeps_its_segments_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let sources = chaja_core::sources::for_tests();
    let rebuilt = create_generation(dir.path(), &sources).unwrap();
    let mut writer = rebuilt.writer_with_threads(16 << 20, 1).unwrap();
    for segment in 0..10 {
        for i in 0..20 {
            writer.upsert(&doc(segment * 100 + i, 0)).unwrap();
        }
        writer.commit(0).unwrap();
    }
    writer.wait_merging_threads().unwrap();
    let path = generation_path(dir.path(), rebuilt.id);
    let segments = || -> std::collections::HashSet<_> {
        Index::open_in_dir(&path)
            .unwrap()
            .searchable_segment_ids()
            .unwrap()
            .into_iter()
            .collect()
    };
    let written = segments();
    assert_eq!(written.len(), 10, "the rebuild writer merged");
    publish(dir.path(), rebuilt.id).unwrap();
    drop(rebuilt);
    assert_eq!(crate::merges::sealed(&path), written);

    let index = SearchIndex::open_for_serving(dir.path(), &sources).unwrap();
    let mut writer = index.live().writer(16 << 20).unwrap();
    writer.upsert(&doc(5_000, 0)).unwrap();
    writer.commit(1).unwrap();
    writer.wait_merging_threads().unwrap();
    let serving = segments();
    assert!(written.is_subset(&serving), "a sealed segment was merged");
    assert_eq!(serving.len(), 11);
}

/// Two rows of one time whose integer keys differ by 2⁵⁹ (and two of other
/// sources with the same key) have ranks of their own: a cursor walk one
/// hit a page returns every one of them, once. (The tiebreak used to
/// shift the key left by 5 bits, so such keys shared a rank and the walk
/// skipped one.)
#[test]
fn no_two_documents_share_a_rank() {
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(16 << 20).unwrap();
    let keys = [1i64, 1 + (1 << 59), 1 + (1 << 60), -1, i64::MIN + 1];
    let mut wanted = Vec::new();
    for (i, key) in keys.into_iter().enumerate() {
        for source in [0, 1] {
            let mut d = doc(key, 1);
            d.source = SourceId::from_index(source);
            d.created_at = 5;
            d.body = vec![format!("같은 시각 {i}")];
            writer.upsert(&d).unwrap();
            wanted.push((source, key));
        }
    }
    writer.commit(1).unwrap();
    generation.reload().unwrap();
    for sort in [search::Sort::Recent, search::Sort::Oldest] {
        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let request = search::Request {
                sort: sort.clone(),
                after,
                ..search::Request::newest_first(chaja_core::text::parse_query("같은"), 1)
            };
            let response = search::search(&generation, &request).unwrap();
            assert_eq!(response.total, wanted.len() as u64);
            let Some(hit) = response.hits.first() else {
                break;
            };
            let key = match hit.key {
                chaja_core::model::Key::Int(i) => i,
                _ => unreachable!(),
            };
            walked.push((hit.source.index(), key));
            after = Some(hit.rank);
            assert!(walked.len() <= wanted.len(), "{sort:?}: the walk repeats");
        }
        walked.sort_unstable();
        let mut want = wanted.clone();
        want.sort_unstable();
        assert_eq!(walked, want, "{sort:?}");
    }
}

/// A time column of another unit read as milliseconds (nanoseconds since
/// the epoch) lies beyond what the segment order holds: the index keeps
/// those times clamped, so that newest first still follows the segment
/// order. The first hit of a newest-first walk ranks above every other.
#[test]
fn times_beyond_the_sort_keys_range_still_walk_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(16 << 20).unwrap();
    let nanos = 1_700_000_000_000_000_000i64;
    for (key, offset) in [(1, 2), (2, 1), (3, 3), (4, -7)] {
        let mut d = doc(key, 1);
        d.created_at = nanos + offset;
        d.body = vec!["먼 시각".to_owned()];
        writer.upsert(&d).unwrap();
    }
    writer.commit(1).unwrap();
    generation.reload().unwrap();
    let mut walked = Vec::new();
    let mut after = None;
    loop {
        let request = search::Request {
            after,
            ..search::Request::newest_first(chaja_core::text::parse_query("시각"), 1)
        };
        let response = search::search(&generation, &request).unwrap();
        assert_eq!(response.total, 4);
        let Some(hit) = response.hits.first() else {
            break;
        };
        walked.push(hit.rank);
        after = Some(hit.rank);
        assert!(walked.len() <= 4, "the walk repeats");
    }
    assert_eq!(walked.len(), 4, "every row once");
    assert!(
        walked.windows(2).all(|pair| pair[0] > pair[1]),
        "newest first: {walked:?}"
    );
}

/// `reload` builds every segment's arrays before any query (so that no
/// first query pays for them), and drops those of segments merged away.
#[test]
fn reload_builds_each_segments_arrays_and_drops_merged_ones() {
    let config = chaja_core::sources::ConfigFile::parse(
        "[[source]]\nname = \"question\"\ntable = \"questions\"\nid = \"id\"\ncreated_at = \"created_at\"\nfields = [\"title\", \"content\"]\nattributes = [\"rating\", \"likes\"]\nnumeric = [\"likes\"]\nfacets = [\"rating\"]",
    )
    .unwrap();
    let sources = config.sources.as_ref().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), sources).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    for id in 0..6i64 {
        let mut row = doc(id, id);
        row.attributes = vec![
            (
                "rating".to_owned(),
                chaja_core::model::AttrValue::Int(id % 3),
            ),
            ("likes".to_owned(), chaja_core::model::AttrValue::Int(id)),
        ];
        writer.upsert(&row).unwrap();
        writer.commit(id).unwrap();
    }
    generation.reload().unwrap();
    let segments: Vec<_> = generation
        .reader
        .searcher()
        .segment_readers()
        .iter()
        .map(|s| s.segment_id())
        .collect();
    assert!(segments.len() > 1, "one commit per row: several segments");
    assert_eq!(
        generation.caches.attr_arrays.segments(),
        (segments.len(), segments.len())
    );
    assert_eq!(generation.caches.doc_sources.iter().count(), segments.len());

    writer.writer.merge(&segments).wait().unwrap();
    generation.reload().unwrap();
    assert_eq!(generation.reader.searcher().segment_readers().len(), 1);
    assert_eq!(generation.caches.attr_arrays.segments(), (1, 1));
    assert_eq!(generation.caches.doc_sources.iter().count(), 1);
}

/// Attribute patches answer exactly as rewritten documents do. Two
/// generations get the same changes: one writes a row whose attributes
/// alone changed as a patch (or drops its patch when they are back to
/// its document's), the other rewrites the document. Every request that
/// reads attributes (filters, ranges, attribute orders, facets, hits)
/// answers alike after each round, twice (the second from cached
/// per-segment counts), across merges of the patched generation's
/// segments and after it is opened again from disk.
#[test]
fn patched_rows_answer_as_rewritten_rows_do() {
    use crate::search::{search, AttrOrder, Filter, NumberRange, Request, Sort};
    use chaja_core::model::AttrValue;
    use std::collections::HashMap;

    let config = chaja_core::sources::ConfigFile::parse(
        "[[source]]\nname = \"question\"\ntable = \"questions\"\nid = \"id\"\ncreated_at = \"created_at\"\nfields = [\"title\", \"content\"]\nattributes = [\"rating\", \"likes\", \"author\"]\nnumeric = [\"likes\"]\nfacets = [\"rating\"]",
    )
    .unwrap();
    let sources = config.sources.as_ref().unwrap();
    let patched_dir = tempfile::tempdir().unwrap();
    let rewritten_dir = tempfile::tempdir().unwrap();
    let mut patched = create_generation(patched_dir.path(), sources).unwrap();
    let rewritten = create_generation(rewritten_dir.path(), sources).unwrap();
    let mut patching = patched.writer(32 << 20).unwrap();
    let mut rewriting = rewritten.writer(32 << 20).unwrap();

    // A small deterministic generator: the test must fail the same way
    // every time it fails.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let attributes = |rating: u64, likes: u64, author: u64| {
        vec![
            (
                "rating".to_owned(),
                match rating {
                    0 => AttrValue::Null,
                    r => AttrValue::Int(r as i64),
                },
            ),
            ("likes".to_owned(), AttrValue::Int(likes as i64)),
            (
                "author".to_owned(),
                AttrValue::Str(format!("작성자{author}")),
            ),
        ]
    };
    let text = |id: i64, version: u64| {
        let word = if id % 3 == 0 {
            "드문 주제"
        } else {
            "평범한 주제"
        };
        format!("공통 본문 {word} {version}")
    };
    let mut rows: HashMap<i64, Doc> = HashMap::new();
    // What the patched generation's document holds of each row's
    // attributes, to tell a patch from an unpatch.
    let mut documents: HashMap<i64, Vec<(String, AttrValue)>> = HashMap::new();
    for id in 0..60i64 {
        let mut row = doc(id, 0);
        row.body = vec![text(id, 0)];
        row.attributes = attributes(next(4), next(6), next(3));
        patching.upsert(&row).unwrap();
        rewriting.upsert(&row).unwrap();
        documents.insert(id, row.attributes.clone());
        rows.insert(id, row);
    }

    let requests = || {
        let q = |q: &str| chaja_core::text::parse_query(q);
        let base = |words: &str| Request::newest_first(q(words), 100);
        let mut all = Vec::new();
        for words in ["공통", "드문", "주제"] {
            all.push(base(words));
            for (name, value) in [("rating", "3"), ("likes", "2"), ("author", "작성자1")] {
                let mut r = base(words);
                r.filter.attributes = vec![(name.to_owned(), value.to_owned())];
                all.push(r);
            }
            let mut r = base(words);
            r.filter = Filter {
                ranges: vec![NumberRange {
                    name: "likes".to_owned(),
                    gte: Some(2.0),
                    lte: Some(4.0),
                }],
                attributes: vec![("rating".to_owned(), "1".to_owned())],
                ..Filter::default()
            };
            all.push(r);
            for descending in [true, false] {
                let mut r = base(words);
                r.limit = 10;
                r.sort = Sort::Attribute(AttrOrder {
                    name: "likes".to_owned(),
                    descending,
                });
                all.push(r);
            }
            let mut r = base(words);
            r.facets = vec!["rating".to_owned()];
            all.push(r);
            let mut r = base(words);
            r.facets = vec!["rating".to_owned()];
            r.filter.attributes = vec![("author".to_owned(), "작성자2".to_owned())];
            all.push(r);
        }
        all
    };
    let compare = |patched: &Generation, round: usize| {
        for request in requests() {
            for pass in ["first", "cached"] {
                let got = search(patched, &request).unwrap();
                let want = search(&rewritten, &request).unwrap();
                assert_eq!(
                    got, want,
                    "round {round}, {pass}: {:?} {:?} {:?}",
                    request.keywords, request.filter, request.sort
                );
            }
        }
    };

    for round in 0..10usize {
        // Every other round changes attributes alone: no document is
        // deleted, so only the patch stamps tell cached counts to go.
        let attributes_only = round % 2 == 1;
        for _ in 0..25 {
            let id = next(70) as i64;
            let source = SourceId::from_index(0);
            let kind = if attributes_only {
                3 + next(7)
            } else {
                next(10)
            };
            match (rows.get(&id).cloned(), kind) {
                (Some(_), 0) => {
                    patching.delete(source, &id.to_string());
                    rewriting.delete(source, &id.to_string());
                    rows.remove(&id);
                    documents.remove(&id);
                }
                (Some(mut row), 1) => {
                    row.body = vec![text(id, next(1000))];
                    patching.upsert(&row).unwrap();
                    rewriting.upsert(&row).unwrap();
                    documents.insert(id, row.attributes.clone());
                    rows.insert(id, row);
                }
                (Some(mut row), 2) => {
                    // Back to what its document holds.
                    row.attributes = documents[&id].clone();
                    patching.unpatch(source, &id.to_string());
                    rewriting.upsert(&row).unwrap();
                    rows.insert(id, row);
                }
                (Some(mut row), _) => {
                    row.attributes = attributes(next(4), next(6), next(3));
                    if row.attributes == documents[&id] {
                        patching.unpatch(source, &id.to_string());
                    } else {
                        patching.patch(&row).unwrap();
                    }
                    rewriting.upsert(&row).unwrap();
                    rows.insert(id, row);
                }
                (None, _) if attributes_only => {}
                (None, _) => {
                    let mut row = doc(id, 0);
                    row.body = vec![text(id, next(1000))];
                    row.attributes = attributes(next(4), next(6), next(3));
                    patching.upsert(&row).unwrap();
                    rewriting.upsert(&row).unwrap();
                    documents.insert(id, row.attributes.clone());
                    rows.insert(id, row);
                }
            }
        }
        patching.commit(round as i64).unwrap();
        rewriting.commit(round as i64).unwrap();
        patched.reload().unwrap();
        rewritten.reload().unwrap();
        assert!(
            round == 0 || !patched.view().patches.is_empty(),
            "round {round}: no patch"
        );
        compare(&patched, round);
        assert_eq!(patched.num_docs(), rows.len() as u64, "round {round}");
        if round % 3 == 2 {
            let segments: Vec<_> = patched
                .view()
                .searcher
                .segment_readers()
                .iter()
                .map(|s| s.segment_id())
                .collect();
            if segments.len() > 1 {
                patching.writer.merge(&segments).wait().unwrap();
                patched.reload().unwrap();
                compare(&patched, round);
            }
        }
    }
    // What the indexer and `verify` compare: every row's digest as the
    // table would give it.
    let (digests, duplicates) = patched.digests().unwrap();
    assert!(duplicates.is_empty());
    for (id, row) in &rows {
        assert_eq!(
            digests[&key_term(row.source, &id.to_string())],
            row.digest()
        );
    }
    assert_eq!(digests.len(), rows.len());

    // Patches are committed documents: opened again, the same answers.
    patching.wait_merging_threads().unwrap();
    let id = patched.id;
    drop(patched);
    patched = Generation::open(patched_dir.path(), id, sources).unwrap();
    assert!(!patched.view().patches.is_empty());
    compare(&patched, 10);
}

/// Under `sort=relevance` a page of 10 is the first 10 of the whole
/// order, across segments and the ranges scanned apart. Rows of many ages,
/// so that the recency factor reorders close scores: a scan that stopped
/// ranking matches whose BM25 alone is below the 10th score would fail it
/// (checked with such a cut, which was measured and not kept).
#[test]
fn a_relevance_page_is_the_head_of_the_whole_order() {
    use crate::search::{search, Request, Sort};
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    let words = ["서버", "설정", "배포", "캐시", "오류", "검색", "있습니다"];
    let day = 86_400_000i64;
    let now = 2_000 * day;
    let mut draws = Draws(0x9e37_79b9_7f4a_7c15);
    let mut next = |n: i64| draws.below(n as u64) as i64;
    for id in 0..1_000i64 {
        // Each word 0-3 times and up to 40 filler words: scores of every
        // size, close ones among them.
        let mut body = vec!["있습니다"];
        for word in words {
            for _ in 0..next(4) {
                body.push(word);
            }
        }
        let filler = next(40) as usize;
        body.extend(std::iter::repeat_n("가나다", filler));
        let mut d = doc(id, 0);
        d.title = Some(words[next(5) as usize].to_owned());
        d.body = vec![body.join(" ")];
        // Ages from today to 400 days: factors of 1.04 to 1.2.
        d.created_at = now - next(400) * day;
        writer.upsert(&d).unwrap();
        if id % 300 == 299 {
            writer.commit(id).unwrap();
        }
    }
    writer.commit(1_000).unwrap();
    generation.reload().unwrap();
    for q in [
        "있습니다",
        "서버",
        "설정 배포",
        "캐시 있습니다",
        "오류 검색",
    ] {
        let request = |limit| {
            let mut r = Request::newest_first(chaja_core::text::parse_query(q), limit);
            r.sort = Sort::Relevance;
            r.now = now;
            r
        };
        let all = search(&generation, &request(1_000)).unwrap();
        assert!(all.hits.len() > 30, "{q}: {} matches", all.hits.len());
        let page = search(&generation, &request(10)).unwrap();
        assert_eq!(page.total, all.total, "{q}");
        let ranks = |hits: &[crate::search::Hit]| hits.iter().map(|h| h.rank).collect::<Vec<_>>();
        assert_eq!(ranks(&page.hits), ranks(&all.hits[..10]), "{q}");
    }
}

/// The keys of the documents the index holds, in key order.
fn held_keys(generation: &Generation) -> Vec<i64> {
    generation.reload().unwrap();
    let mut keys = Vec::new();
    for segment in generation.reader.searcher().segment_readers() {
        for_each_live_key(segment, |_, key| {
            if let Some((_, key)) = parse_key_term(key) {
                keys.push(key.parse().unwrap());
            }
        })
        .unwrap();
    }
    keys.sort_unstable();
    keys
}

/// At the steady pace a round's documents go to one of the serving
/// writer's two indexing threads as one batch, so its commit ends one
/// segment; at a burst they are spread, and either way every operation
/// keeps its order, across a change of pace too.
#[test]
fn a_steady_round_ends_one_segment_and_every_pace_keeps_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
    let mut writer = generation.writer(64 << 20).unwrap();
    for id in 0..400 {
        writer.upsert(&doc(id, 0)).unwrap();
    }
    writer.commit(1).unwrap();
    generation.reload().unwrap();
    assert_eq!(generation.reader.searcher().segment_readers().len(), 1);
    assert_eq!(held_keys(&generation), (0..400).collect::<Vec<_>>());

    // Held operations go before the ones after a change of pace, none is
    // lost, and each batch keeps its order: 1 is deleted, then written
    // again; 400 is written twice.
    let delete = |writer: &mut DocWriter, id: &str| writer.delete(SourceId::from_index(0), id);
    writer.set_pace(Pace::Steady).unwrap();
    writer.upsert(&doc(400, 1)).unwrap();
    delete(&mut writer, "1");
    delete(&mut writer, "2");
    writer.set_pace(Pace::Burst).unwrap();
    delete(&mut writer, "0");
    writer.upsert(&doc(1, 2)).unwrap();
    writer.set_pace(Pace::Steady).unwrap();
    delete(&mut writer, "400");
    writer.upsert(&doc(400, 3)).unwrap();
    writer.upsert(&doc(401, 3)).unwrap();
    writer.commit(2).unwrap();
    let expected: Vec<i64> = [1].into_iter().chain(3..=401).collect();
    assert_eq!(held_keys(&generation), expected);
    assert_eq!(generation.duplicate_keys().unwrap(), Vec::<String>::new());
}

/// The integer key of a test row.
pub(crate) fn int_key(doc: &Doc) -> i64 {
    match doc.key {
        chaja_core::model::Key::Int(i) => i,
        chaja_core::model::Key::Str(_) => unreachable!("test rows have integer keys"),
    }
}

/// A test row: its title and its body fields.
type Row<'a> = (Option<&'a str>, &'a [&'a str]);

/// A generation of `trigrams` and `fourgrams` holding `rows` (keys 0, 1,
/// …), the last written and then deleted; and the same generation opened
/// again from disk.
fn rows_with_grams(
    trigrams: &Trigrams,
    fourgrams: &Fourgrams,
    rows: &[Row],
) -> (tempfile::TempDir, Generation, Generation) {
    let dir = tempfile::tempdir().unwrap();
    let sources = chaja_core::sources::for_tests();
    let generation =
        create_generation_with_grams(dir.path(), &sources, trigrams, fourgrams).unwrap();
    let mut writer = generation.writer(32 << 20).unwrap();
    for (i, (title, body)) in rows.iter().enumerate() {
        let mut d = doc(i as i64, 1);
        d.title = title.map(str::to_owned);
        d.body = body.iter().map(|b| b.to_string()).collect();
        writer.upsert(&d).unwrap();
    }
    writer.commit(1).unwrap();
    let last = (rows.len() - 1).to_string();
    writer.delete(SourceId::from_index(0), &last);
    writer.commit(2).unwrap();
    generation.reload().unwrap();
    let reopened = Generation::open(dir.path(), 1, &sources).unwrap();
    (dir, generation, reopened)
}

/// With `grams3` holding only the common trigrams, a rare one is still
/// found wherever it is: where a 4-gram starts with it (mid-text, or
/// before the separator at the end of the title or of a body field), at
/// the very end of the text (where `grams3` holds it), and as a whole
/// text; alone and ANDed with a common one. It is not found across two
/// fields, nor in a deleted row; and the list is read back when the
/// generation is opened again.
#[test]
fn rare_trigrams_are_found_wherever_they_are() {
    let common = Trigrams::only(["있습니"]);
    let rows: [Row; 9] = [
        (Some("드문말 제목"), &["있습니다"]),
        (Some("제목 드문말"), &["있습니다"]),
        (None, &["앞 드문말 뒤"]),
        (None, &["있습니다 드문말"]),
        (None, &["드문말", "둘째"]),
        (None, &["드문말"]),
        (None, &["드문", "말"]),
        (Some("드문"), &["말"]),
        (None, &["드문말 지울 행"]),
    ];
    let (_dir, written, reopened) = rows_with_grams(&common, &Fourgrams::every(), &rows);
    for generation in [written, reopened] {
        assert_eq!(generation.fields.trigrams.common(), Some(1));
        let total = |q: &str| total_of(&generation, q);
        assert_eq!(total("드문말"), 6);
        assert_eq!(total("있습니"), 3);
        assert_eq!(total("드문말 있습니"), 3);
        assert_eq!(total("말 뒤"), 1);
        assert_eq!(total("드문말 뒤"), 1);
        assert_eq!(total("없는말"), 0);
    }
}

/// With `grams4` keeping positions only for some 4-grams, a long keyword is
/// still found exactly: as a phrase where its held 4-grams pin every
/// character (a cover other than the plain one), and otherwise as the
/// rows holding its 4-grams, checked against their text, which drops the
/// rows that hold them apart. A rare 4-gram is one term of `grams4_rare`,
/// and a rare trigram's 4-grams are found in both fields. Deleted rows and
/// matches across two fields stay out, relevance finds the same rows, and
/// the list is read back when the generation is opened again.
#[test]
fn long_keywords_with_rare_fourgrams_are_found_exactly() {
    use crate::search::{search, Request, Sort};
    // Held: `스프링부` and `링부트 `; `프링부트` is not, so `스프링부트 `
    // is the phrase of the two, and `스프링부트` (whose `트` only
    // `프링부트` pins) is checked.
    let fourgrams = Fourgrams::only(["스프링부", "링부트 "]);
    let rows: [Row; 7] = [
        (Some("스프링부트 설정"), &["본문"]),
        (None, &["앞 스프링부트"]),
        (None, &["스프링부트 뒤"]),
        // Every 4-gram of `스프링부트`, but apart.
        (None, &["스프링부 프링부트"]),
        (None, &["스프링", "부트"]),
        (Some("스프링부"), &["트"]),
        (None, &["지울 스프링부트"]),
    ];
    let (_dir, written, reopened) = rows_with_grams(&Trigrams::every(), &fourgrams, &rows);
    for generation in [written, reopened] {
        assert_eq!(generation.fields.fourgrams.common(), Some(2));
        let total = |q: &str| total_of(&generation, q);
        assert_eq!(total("스프링부트"), 3);
        assert_eq!(total("\"스프링부트 \""), 2);
        assert_eq!(total("프링부트"), 4);
        assert_eq!(total("프링부"), 5);
        assert_eq!(total("\"부트 뒤\""), 1);
        assert_eq!(total("스프링부트 설정"), 1);
        assert_eq!(total("스프링부트 본문"), 1);
        assert_eq!(total("\"링부트 설\""), 1);
        assert_eq!(total("부트설정"), 0);
        let mut relevance = Request::newest_first(chaja_core::text::parse_query("스프링부트"), 10);
        relevance.sort = Sort::Relevance;
        let found = search(&generation, &relevance).unwrap();
        assert_eq!(found.total, 3);
        let mut ids: Vec<String> = found.hits.iter().map(|h| h.key.text()).collect();
        ids.sort();
        assert_eq!(ids, ["0", "1", "2"]);
    }
}

/// A candidate whose stored text cannot be read fails the search: it is
/// neither counted (the old behaviour, one row too many) nor dropped (one
/// too few), and nothing is kept of the visit for later searches. The
/// doc store's blocks are overwritten in place, so the generation opens
/// and only the text check reads them.
#[test]
fn an_unreadable_candidate_fails_the_search_instead_of_counting() {
    use crate::search::{search, Request};
    use std::io::{Seek, Write};
    let fourgrams = Fourgrams::only(["스프링부", "링부트 "]);
    let rows: [Row; 5] = [
        (Some("스프링부트 설정"), &["본문"]),
        (None, &["앞 스프링부트"]),
        (None, &["스프링부 프링부트"]),
        (None, &["다른 글"]),
        (None, &["지울 행"]),
    ];
    let (dir, written, reopened) = rows_with_grams(&Trigrams::every(), &fourgrams, &rows);
    // The keyword's rows are checked against their text: counted right
    // while the text reads.
    let count = |generation: &Generation| {
        let request = Request::newest_first(chaja_core::text::parse_query("스프링부트"), 0);
        search(generation, &request).map(|found| found.total)
    };
    assert_eq!(count(&reopened).unwrap(), 2);
    drop((written, reopened));
    let path = generation_path(dir.path(), 1);
    let mut stores = 0;
    for entry in std::fs::read_dir(&path).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "store") {
            let len = std::fs::metadata(&path).unwrap().len();
            let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.seek(std::io::SeekFrom::Start(0)).unwrap();
            // The first block's bytes; the block index at the end stays.
            file.write_all(&vec![0xFF; (len / 4) as usize]).unwrap();
            stores += 1;
        }
    }
    assert!(stores > 0);
    let broken = Generation::open(dir.path(), 1, &chaja_core::sources::for_tests()).unwrap();
    for round in 0..2 {
        match count(&broken) {
            Err(IndexError::Unreadable(_)) => {}
            other => panic!("round {round}: {other:?}"),
        }
    }
}

/// Relevance scores rows, not documents: a generation whose every row is
/// patched (a storm of likes, each a patch document) scores and ranks
/// exactly as one with the same rows written whole. Counted as documents,
/// the patches doubled the count every idf and the average length are
/// taken over, and every score moved.
#[test]
fn patches_leave_relevance_as_the_rows_written_whole() {
    use crate::search::{search, Request, Sort};
    use chaja_core::model::AttrValue;
    let sources = chaja_core::sources::for_tests();
    let row = |i: i64, likes: i64| {
        let mut d = doc(i, 0);
        d.body = vec![match i % 4 {
            0 => "스프링 스프링 설정 이야기".to_owned(),
            1 => "스프링 배포 이야기와 설정".to_owned(),
            2 => "설정 설정 설정 스프링".to_owned(),
            _ => format!("다른 이야기 {i}"),
        }];
        d.attributes = vec![("author_id".to_owned(), AttrValue::Int(likes))];
        d
    };
    let patched_dir = tempfile::tempdir().unwrap();
    let whole_dir = tempfile::tempdir().unwrap();
    let patched = create_generation(patched_dir.path(), &sources).unwrap();
    let whole = create_generation(whole_dir.path(), &sources).unwrap();
    let mut patching = patched.writer_with_threads(32 << 20, 1).unwrap();
    let mut writing = whole.writer_with_threads(32 << 20, 1).unwrap();
    for i in 0..200 {
        patching.upsert(&row(i, 1)).unwrap();
        writing.upsert(&row(i, 7)).unwrap();
    }
    patching.commit(1).unwrap();
    for i in 0..200 {
        patching.patch(&row(i, 7)).unwrap();
    }
    patching.commit(2).unwrap();
    writing.commit(2).unwrap();
    patched.reload().unwrap();
    whole.reload().unwrap();
    assert_eq!(patched.view().patches.len(), 200);
    for q in ["스프링", "스프링 설정", "설정 이야기"] {
        let mut request = Request::newest_first(chaja_core::text::parse_query(q), 20);
        request.sort = Sort::Relevance;
        request.now = 1_500;
        let found = search(&patched, &request).unwrap();
        let want = search(&whole, &request).unwrap();
        assert_eq!(found.total, want.total, "{q}");
        let ranks = |r: &crate::search::Response| r.hits.iter().map(|h| h.rank).collect::<Vec<_>>();
        assert_eq!(ranks(&found), ranks(&want), "{q}");
    }
}
