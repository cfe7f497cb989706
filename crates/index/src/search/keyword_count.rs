//! Counting from kept bitsets: an AND of common keywords, long ones too,
//! and its union with the morphemes' matches.
//!
//! A keyword of five or more characters is a phrase of 4-grams (see
//! `query`), and counting its matches checks the positions of every
//! candidate: at 1M rows that check is most of a never-seen query's time.
//! The keywords that make it costly are the common ones (`있습니다.` is in
//! about half the rows), and a common keyword recurs in queries that are
//! otherwise new. So once a range's top-k is final, each keyword's
//! documents in the whole segment are found once, by visiting its matches,
//! and kept as a bitset in the same weighed cache as the terms' bitsets
//! (see `term_count::anded`); the next query that holds the keyword counts its
//! matches in a range from the bitsets of its keywords, ANDed, a word per
//! 64 documents. Lucene's query cache keeps a frequent clause's bitset per
//! segment the same way.
//!
//! With `match=morph` a row matches the keywords' AND or holds every
//! morpheme of them, each in its title or its content. That union is
//! counted the same way: the morphemes' terms are common terms whose
//! bitsets are kept as `term_count::anded` keeps them (a rare one is decoded
//! for the range only), ORed per morpheme, ANDed, and ORed with the
//! keywords' AND.
//!
//! Only a common keyword is kept: one whose rarest 4-gram is in at least
//! one document in [`DENSE_RATIO`] of the segment. A rarer one has few
//! candidates, which are cheap to visit, and its bitset would cost as much
//! memory for little. A segment's documents never change, so neither does
//! a keyword's bitset; the range's deletions are cleared per search.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tantivy::query::{EnableScoring, Weight};
use tantivy::{DocId, DocSet, Searcher, SegmentReader, Term, COLLECT_BLOCK_BUFFER_LEN};

use super::bits::{alive_in, term_words, DENSE_RATIO};
use super::budget::{Budget, ScanError, BUDGET_EVERY_MATCHES};
use super::contains::ReadFailures;
use super::query::keyword_query;
use super::request::{plain_keywords, Request};
use super::terms::{gram_field, long_key, morpheme_fields, morphemes, rare_trigram, Long};
use crate::caches::Caches;
use crate::schema::Fields;
use crate::IndexError;

/// A keyword as a set of documents: what finds it, and what keeps it.
pub(crate) struct KeywordSet {
    /// Its key among the kept bitsets: its term, for a keyword of up to
    /// four characters (the key `term_count::anded` keeps it under); for a
    /// longer one, its whole text as a term of the 4-gram field, which
    /// holds no term longer than four characters.
    key: Term,
    /// Its matches, unscored.
    weight: Box<dyn Weight>,
    /// The terms every match holds: its rarest says whether it is common.
    cover: Vec<Term>,
}

/// What a request's matches are, as sets of documents: the AND of its
/// keywords, or with `match=morph` that AND or every morpheme (in the
/// title or the content).
pub(crate) struct Sets {
    keywords: Vec<KeywordSet>,
    /// Where the keywords' queries report a candidate they could not read:
    /// a set visited meanwhile is not kept.
    failures: ReadFailures,
    /// Each morpheme's title and content terms, with `match=morph`.
    morphemes: Vec<[Term; 2]>,
}

/// The request's matches as sets, before its time and source bounds, when
/// they can be (no synonym, no attribute filter) and `count` cannot count
/// them: one keyword is longer than four characters, or morphemes match.
pub(super) fn keyword_sets(
    fields: &Fields,
    request: &Request,
    searcher: &Searcher,
    failures: &ReadFailures,
) -> crate::Result<Option<Sets>> {
    // A rare trigram has few matches, cheap to visit: it is never kept.
    if !plain_keywords(request)
        || !request.morph && request.keywords.iter().all(|k| k.char_len() <= 4)
        || request.keywords.iter().any(|k| rare_trigram(fields, k))
    {
        return Ok(None);
    }
    let morphemes = match request.morph {
        true => morpheme_fields(fields, &morphemes(request)),
        false => Vec::new(),
    };
    let unscored = EnableScoring::disabled_from_searcher(searcher);
    let mut sets = Vec::with_capacity(request.keywords.len());
    for keyword in &request.keywords {
        let (key, cover) = match gram_field(fields, keyword) {
            Some(field) => {
                let term = Term::from_field_text(field, keyword.as_str());
                (term.clone(), vec![term])
            }
            None => (
                long_key(fields, keyword),
                Long::of(fields, keyword.as_str()).terms(),
            ),
        };
        let weight = keyword_query(fields, keyword, false, failures).weight(unscored)?;
        sets.push(KeywordSet { key, weight, cover });
    }
    Ok(Some(Sets {
        keywords: sets,
        failures: failures.clone(),
        morphemes,
    }))
}

/// The alive documents of `range` in every set, from kept bitsets, found
/// and kept first where a set is common and the range is a quarter of its
/// run or more; `None` when a set is not common, or not kept and the range
/// too small to pay for it: its matches are visited instead. `run` is the
/// run of one source (see `order`) that holds `range`: a long keyword is
/// kept per run, so that a segment's runs, scanned in parallel, are found
/// in parallel, and a source filter finds only its own. `deleted` is the
/// segment's deleted documents, ascending; bitsets are kept in `caches`,
/// whose counter the matches visited are added to, as a scan adds its
/// own, and `budget` is checked as a scan checks it.
pub(super) fn in_range(
    segment: &SegmentReader,
    sets: &Sets,
    run: Range<DocId>,
    range: Range<DocId>,
    deleted: &[DocId],
    caches: &Caches,
    budget: &Budget,
) -> Result<Option<u64>, ScanError> {
    let (bits, scanned) = (&caches.term_bits, &caches.scanned);
    debug_assert!(range.is_empty() || run.start <= range.start && range.end <= run.end);
    if range.is_empty() {
        return Ok(Some(0));
    }
    let max_doc = segment.max_doc();
    let keep = u64::from(range.end - range.start) * 4 >= u64::from(run.end - run.start);
    let id = segment.segment_id();
    // Each set's bitset and the document of its first word: its run's, or
    // its whole segment's (a short keyword's, kept by `term_count::anded`).
    let mut kept = Vec::with_capacity(sets.keywords.len());
    let mut missing = Vec::new();
    for set in &sets.keywords {
        let of_run = bits.get(&(id, run.clone(), set.key.clone()));
        match of_run.map(|held| (run.start, held)).or_else(|| {
            let whole = bits.get(&(id, 0..max_doc, set.key.clone()));
            whole.map(|held| (0, held))
        }) {
            Some(held) => kept.push(held),
            None => missing.push(set),
        }
    }
    if !missing.is_empty() && !keep {
        return Ok(None);
    }
    // Every missing set common, before any is visited. A keyword in no
    // document empties the AND.
    let mut none = false;
    for set in &missing {
        let mut rarest = u32::MAX;
        for term in &set.cover {
            let inverted = segment.inverted_index(term.field())?;
            let info = inverted
                .get_term_info(term)
                .map_err(crate::IndexError::from)?;
            let held = info.map_or(0, |info| info.doc_freq);
            rarest = rarest.min(held);
        }
        if rarest == 0 {
            none = true;
            break;
        }
        if u64::from(rarest) * DENSE_RATIO < u64::from(max_doc) {
            return Ok(None);
        }
    }
    if none && sets.morphemes.is_empty() {
        return Ok(Some(0));
    }
    if none {
        missing.clear();
    }
    for set in missing {
        // One search visits, any other that needs the same set of the same
        // run meanwhile waits for its bitset instead of visiting it again.
        let key = (id, run.clone(), set.key.clone());
        let failures = &sets.failures;
        let find = || visit(segment, set, &run, budget, scanned, failures);
        let held = match bits.try_get_with(key, find) {
            Ok(held) => held,
            Err(e) => match &*e {
                // The search that visited was stopped, not this one.
                ScanError::Stopped if !budget.exhausted() => {
                    visit(segment, set, &run, budget, scanned, failures)?
                }
                ScanError::Stopped => return Err(ScanError::Stopped),
                // Shared with the searches that waited for it: the same
                // kind of error, by value.
                ScanError::Index(IndexError::Unreadable(what)) => {
                    return Err(ScanError::Index(IndexError::Unreadable(what.clone())))
                }
                ScanError::Index(e) => {
                    return Err(ScanError::Index(
                        std::io::Error::other(e.to_string()).into(),
                    ))
                }
            },
        };
        kept.push((run.start, held));
    }
    let (first, last) = ((range.start / 64) as usize, range.end.div_ceil(64) as usize);
    let mut all = vec![if none { 0 } else { !0u64 }; last - first];
    for (start, held) in kept.iter().filter(|_| !none) {
        let from = first - (start / 64) as usize;
        for (a, h) in all.iter_mut().zip(&held[from..from + (last - first)]) {
            *a &= h;
        }
    }
    if !sets.morphemes.is_empty() {
        // Or every morpheme, each in the title or the content.
        let mut every = vec![!0u64; last - first];
        for [title, content] in &sets.morphemes {
            let title = term_words(segment, title, first..last, keep, bits)?;
            let content = term_words(segment, content, first..last, keep, bits)?;
            for ((e, t), c) in every.iter_mut().zip(title).zip(content) {
                *e &= t | c;
            }
        }
        for (a, e) in all.iter_mut().zip(every) {
            *a |= e;
        }
    }
    let from = deleted.partition_point(|&doc| doc < range.start);
    let to = deleted.partition_point(|&doc| doc < range.end);
    Ok(Some(alive_in(all, &range, &deleted[from..to])))
}

/// Every document of `run` that `set` matches, deleted ones included, as a
/// bitset whose first word is the one of the run's first document: its
/// matches visited once, counted in `scanned`, the budget checked as a scan
/// checks it.
fn visit(
    segment: &SegmentReader,
    set: &KeywordSet,
    run: &Range<DocId>,
    budget: &Budget,
    scanned: &AtomicU64,
    failures: &ReadFailures,
) -> Result<Arc<[u64]>, ScanError> {
    let base = run.start / 64 * 64;
    let mut bits = vec![0u64; (run.end.div_ceil(64) - run.start / 64) as usize];
    let mut scorer = set.weight.scorer(segment, 1.0)?;
    if scorer.doc() < run.start {
        scorer.seek(run.start);
    }
    let mut docs = [0 as DocId; COLLECT_BLOCK_BUFFER_LEN];
    let mut since_look = 0usize;
    while scorer.doc() < run.end {
        let filled = scorer.fill_buffer(&mut docs);
        // Sorted, so the ones in the run come first.
        let n = docs[..filled].partition_point(|&doc| doc < run.end);
        for &doc in &docs[..n] {
            let bit = doc - base;
            bits[(bit / 64) as usize] |= 1u64 << (bit % 64);
        }
        scanned.fetch_add(n as u64, Ordering::Relaxed);
        if n < docs.len() {
            break;
        }
        since_look += n;
        if since_look >= BUDGET_EVERY_MATCHES as usize {
            since_look = 0;
            if budget.exhausted() {
                return Err(ScanError::Stopped);
            }
        }
    }
    // A candidate it could not read leaves the bitset short: never kept.
    failures.check()?;
    Ok(bits.into())
}

#[cfg(test)]
pub(super) mod tests {
    use chaja_core::model::{Doc, Key};
    use chaja_core::sources::SourceId;
    use chaja_core::text::{parse_query, row_matches};

    use crate::create_generation;
    use crate::search::{search, Request, Sort};
    use crate::tests::int_key as key;

    const WORDS: [&str; 6] = [
        "있습니다.",
        "설정합니다",
        "서버를",
        "가나다라마",
        "배포",
        "드문말입니다",
    ];

    /// Every search's totals by source equal the rows', for long keywords
    /// common enough to be kept, alone and ANDed with short ones, with
    /// deletions, under a time window (a range too small to keep), and a
    /// second time from the kept bitsets; the kept bitsets are there.
    #[test]
    fn totals_from_kept_bitsets_are_the_rows() {
        let (_dir, generation, docs) = index();
        for round in 0..2 {
            for q in [
                "있습니다.",
                "설정합니다 서버를",
                "있습니다. 배포",
                "가나다라마 설정합니다 있습니다.",
                "드문말입니다",
                "있습니다. 드문말입니다",
                // In no row, but its morpheme is.
                "있습니다!",
            ] {
                // The second source alone first: its runs are kept
                // before the first source's.
                for only in [Some(SourceId::from_index(1)), None] {
                    for window in [None, Some((200, 300))] {
                        let keywords = parse_query(q);
                        let mut want = [0u64; 2];
                        for doc in &docs {
                            let in_window = window
                                .is_none_or(|(from, to)| (from..=to).contains(&doc.created_at));
                            if !deleted(key(doc))
                                && in_window
                                && only.is_none_or(|s| s == doc.source)
                                && row_matches(&keywords, title(doc), &doc.body[0])
                            {
                                want[doc.source.index()] += 1;
                            }
                        }
                        let mut request = Request::newest_first(keywords, 3);
                        if let Some((from, to)) = window {
                            request.filter.from = Some(from);
                            request.filter.to = Some(to);
                        }
                        request.filter.source = only;
                        let found = search(&generation, &request).unwrap();
                        let what = format!("{q} {window:?} {only:?}, round {round}");
                        assert_eq!(&found.by_source[..2], &want[..], "{what}");
                        assert_eq!(found.total, want[0] + want[1], "{what}");
                        // With morphemes: the sets' totals are tantivy's.
                        request.morph = true;
                        let found = search(&generation, &request).unwrap();
                        let want = tantivy_counts(&generation, &request);
                        assert_eq!(&found.by_source[..2], &want[..], "{what}, morph");
                    }
                }
            }
        }
        // The long common keywords were kept, in every run of every
        // segment; the rare one was not.
        generation.caches.term_bits.run_pending_tasks();
        let segments = generation.view().searcher.segment_readers().len() as u64;
        assert!(generation.caches.term_bits.entry_count() >= 4 * 2 * segments);
        let rare = tantivy::Term::from_field_text(generation.fields.grams4, "드문말입니다");
        assert!(generation
            .caches
            .term_bits
            .iter()
            .all(|(key, _)| key.2 != rare));
    }

    /// A long keyword read from its kept bitsets (see `cached_keyword`) answers
    /// as its phrase did: relevance searches, with and without
    /// `match=morph`, which keep nothing, give the same hits and totals
    /// before and after
    /// newest-first searches kept their keywords, with their totals
    /// counted again; a relevance total is the rows'.
    #[test]
    fn searches_over_kept_bitsets_answer_as_the_phrases() {
        let (_dir, generation, docs) = index();
        let queries = [
            "있습니다.",
            "설정합니다 서버를",
            "가나다라마 설정합니다 있습니다.",
            "있습니다. 드문말입니다",
        ];
        let answers = || -> Vec<(Request, crate::search::Response)> {
            let mut answers = Vec::new();
            for q in queries {
                let mut relevance = Request::newest_first(parse_query(q), 5);
                relevance.sort = Sort::Relevance;
                let mut both = relevance.clone();
                both.morph = true;
                for request in [relevance, both] {
                    let found = search(&generation, &request).unwrap();
                    answers.push((request, found));
                }
            }
            answers
        };
        let before = answers();
        generation.caches.term_bits.run_pending_tasks();
        // Relevance with `match=morph` keeps its morphemes' bitsets (see
        // `exact_first`), never a keyword's.
        let grams4 = generation.fields.grams4;
        assert!(
            generation
                .caches
                .term_bits
                .iter()
                .all(|(key, _)| key.2.field() != grams4),
            "no keyword kept yet"
        );
        // Relevance counted the same sets: counted again, they are kept.
        generation.caches.totals.invalidate_all();
        for q in queries {
            search(&generation, &Request::newest_first(parse_query(q), 3)).unwrap();
        }
        generation.caches.term_bits.run_pending_tasks();
        let long = |text: &str| tantivy::Term::from_field_text(generation.fields.grams4, text);
        for text in ["있습니다.", "설정합니다", "가나다라마"] {
            assert!(generation
                .caches
                .term_bits
                .iter()
                .any(|(key, _)| key.2 == long(text)));
        }
        generation.caches.totals.invalidate_all();
        let after = answers();
        for ((request, found), (_, was)) in after.iter().zip(&before) {
            assert_eq!(found, was, "{request:?}");
            if !request.morph {
                let want = docs
                    .iter()
                    .filter(|d| {
                        !deleted(key(d)) && row_matches(&request.keywords, title(d), &d.body[0])
                    })
                    .count() as u64;
                assert_eq!(found.total, want, "{request:?}");
            }
        }
    }

    /// `request` as it is, under one source, and in a time window: the
    /// filters the equivalence tests ask each query under.
    pub(crate) fn under_each_filter(request: &Request) -> [Request; 3] {
        let mut by_source = request.clone();
        by_source.filter.source = Some(SourceId::from_index(1));
        let mut windowed = request.clone();
        windowed.filter.from = Some(200);
        windowed.filter.to = Some(600);
        [request.clone(), by_source, windowed]
    }

    /// 3,000 rows of two sources in 5 segments, the common words in about
    /// half the rows each, the rare one in one of 200, and `있습니다`
    /// without its period in some titles and contents; the rows that
    /// [`deleted`] names are deleted.
    pub(crate) fn index() -> (tempfile::TempDir, crate::Generation, Vec<Doc>) {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer_with_threads(32 << 20, 1).unwrap();
        let mut draws = crate::tests::Draws(0x51_7cc1_b727_220a);
        let mut docs = Vec::new();
        for i in 0..3_000i64 {
            // The common words in about half the rows each; the rare one
            // in one of 200.
            let mut words = Vec::new();
            for word in &WORDS[..5] {
                if draws.below(2) == 0 {
                    words.push(*word);
                }
            }
            if draws.below(200) == 0 {
                words.push(WORDS[5]);
            }
            // The word of `있습니다.` without its period, which only
            // morphemes match: in the content of one row in five, and in
            // the title of one in three.
            if draws.below(5) == 0 {
                words.push("있습니다");
            }
            words.push("끝");
            let doc = Doc {
                source: SourceId::from_index((i % 2) as usize),
                key: Key::Int(i),
                title: (i % 3 == 0).then(|| "있습니다 안내".to_owned()),
                body: vec![words.join(" ")],
                created_at: i * 7 % 1_000,
                attributes: Vec::new(),
            };
            writer.upsert(&doc).unwrap();
            docs.push(doc);
            if i % 700 == 699 {
                writer.commit(i).unwrap();
            }
        }
        writer.commit(3_000).unwrap();
        for doc in docs.iter().filter(|d| deleted(key(d))) {
            writer.delete(doc.source, &doc.key.text());
        }
        writer.commit(3_001).unwrap();
        generation.reload().unwrap();
        assert!(generation.view().searcher.segment_readers().len() > 2);

        (dir, generation, docs)
    }

    /// The alive documents of `request`'s query, with nothing kept, as
    /// tantivy collects them, counted by source within its filter.
    fn tantivy_counts(generation: &crate::Generation, request: &Request) -> [u64; 2] {
        let view = generation.view();
        let query = crate::search::query::build_query(
            &generation.fields,
            request,
            false,
            &view.patches,
            crate::search::query::Shared::uncached(),
        );
        let found = view
            .searcher
            .search(&*query, &tantivy::collector::DocSetCollector)
            .unwrap();
        let filter = &request.filter;
        let mut counts = [0; 2];
        for address in found {
            let columns = &view.columns[address.segment_ord as usize];
            let created = columns.created.first(address.doc_id).unwrap();
            let source = crate::tag_source(columns.tag.first(address.doc_id).unwrap());
            if filter.from.is_none_or(|from| created >= from)
                && filter.to.is_none_or(|to| created <= to)
                && filter.source.is_none_or(|only| only.index() == source)
            {
                counts[source] += 1;
            }
        }
        counts
    }

    fn title(doc: &Doc) -> &str {
        doc.title.as_deref().unwrap_or("")
    }

    fn deleted(i: i64) -> bool {
        i % 11 == 4
    }
}
