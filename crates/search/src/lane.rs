//! The heavy lane: searches no cache helps take turns for a few cores.
//!
//! A search box sends first pages, which the cache answers and which stop
//! early on a newest-first index. A time filter, a deep page or a cursor
//! in another order may read every match and is rarely cached; a client
//! varying them could otherwise take every core. Such searches wait in a
//! lane of `CHAJA_HEAVY_SEARCHES` turns with a bounded queue.

use chaja_index::search::{counts_without_visiting, Filter, Request, Sort};

use crate::turns::Turns;

/// Searches whose cost grows with the matches, not the page, run in a
/// lane of their own, `CHAJA_HEAVY_SEARCHES` at a time, so that a client
/// sending them cannot take every core from the searches a search box
/// sends:
///
/// - a time filter: each `from`/`to` pair has its own totals, counted by
///   visiting every match in the window, unless the keyword's postings
///   count them (`counts_without_visiting`: one keyword of up to four
///   characters);
/// - a page past the first by number (`page`): the top `offset + limit`
///   are collected;
/// - any order but newest first, first pages and cursors alike: only
///   newest first follows the index order and stops at the page, so
///   `oldest` and `relevance` rank every match.
///
/// - ranges on attributes: like a time filter, each pair of bounds has its
///   own totals.
///
/// Facets are not heavy by themselves: they are counted in the pass that
/// counts the total and kept per segment alike, so a faceted query costs
/// about what the same query without facets does (docs/benchmarks/019-facets-ranges-attribute-sort.md).
///
/// A newest-first page, first or by cursor, costs its own size once its
/// totals are known (they are counted once per segment and kept): it is
/// light.
pub fn is_heavy(request: &Request) -> bool {
    // A source is a run of each segment, which costs nothing to find; an
    // attribute value is a term of the query.
    let Filter {
        source: _,
        attributes: _,
        from,
        to,
        ranges,
    } = &request.filter;
    let windowed = from.is_some() || to.is_some();
    (windowed && !counts_without_visiting(request))
        || request.offset > 0
        || request.sort != Sort::Recent
        || !ranges.is_empty()
}

/// The lane heavy searches take turns in (see [`Turns`]): past
/// `16 × turns` waiters a heavy search is refused at once (503) rather
/// than holding one of the server's in-flight slots while it waits.
pub type HeavyLane = Turns;

/// A heavy lane of `turns` at once.
pub fn heavy_lane(turns: usize) -> HeavyLane {
    Turns::new("heavy", turns, 16 * turns.max(1))
}

#[cfg(test)]
mod tests {

    use chaja_core::model::{AttrValue, Doc, Key};
    use chaja_core::sources::SourceId;
    use chaja_core::text::parse_query;
    use chaja_index::search::{search, Filter, Request, Sort};
    use chaja_index::Generation;

    use super::is_heavy;

    /// 3,000 rows in three segments, every one holding the keyword.
    fn index() -> (tempfile::TempDir, Generation) {
        let dir = tempfile::tempdir().unwrap();
        let sources = chaja_core::sources::for_tests();
        let generation = chaja_index::create_generation(dir.path(), &sources).unwrap();
        let mut writer = generation.writer(16 << 20).unwrap();
        for i in 0..3_000i64 {
            writer
                .upsert(&Doc {
                    source: SourceId::from_index(0),
                    key: Key::Int(i),
                    title: Some("제목".to_owned()),
                    body: vec![format!("흔한 말 흔한말입니다 {i}")],
                    created_at: i,
                    attributes: vec![("author_id".to_owned(), AttrValue::Int(1))],
                })
                .unwrap();
            if i % 1_000 == 999 {
                writer.commit(i).unwrap();
            }
        }
        generation.reload().unwrap();
        (dir, generation)
    }

    /// Matches a search visited.
    fn work(generation: &Generation, request: &Request) -> u64 {
        let before = generation.scanned();
        search(generation, request).unwrap();
        generation.scanned() - before
    }

    /// The lane follows the work, counted in matches visited: a request is
    /// light exactly when it visits about its page, whatever its depth.
    /// Measured on the totals a later request of its kind finds: a
    /// keyword's are counted once and kept, but each time window has its
    /// own, so a client varying `from`/`to` meets them uncounted every time.
    #[test]
    fn a_request_is_heavy_exactly_when_it_visits_more_than_its_page() {
        let (_dir, generation) = index();
        let first = Request::newest_first(parse_query("흔한"), 10);
        search(&generation, &first).unwrap();
        let deep_cursor = {
            let mut at = first.clone();
            for _ in 0..200 {
                let page = search(&generation, &at).unwrap();
                at.after = Some(page.hits.last().unwrap().rank);
            }
            at
        };
        let requests = [
            ("first page", first.clone()),
            ("cursor page 200", deep_cursor.clone()),
            (
                "oldest",
                Request {
                    sort: Sort::Oldest,
                    ..first.clone()
                },
            ),
            (
                "relevance",
                Request {
                    sort: Sort::Relevance,
                    ..first.clone()
                },
            ),
            (
                "oldest cursor",
                Request {
                    sort: Sort::Oldest,
                    ..deep_cursor.clone()
                },
            ),
            (
                "page 100",
                Request {
                    offset: 990,
                    ..first.clone()
                },
            ),
            (
                "time filter",
                Request {
                    filter: Filter {
                        from: Some(10),
                        to: Some(2_900),
                        ..Filter::default()
                    },
                    ..first.clone()
                },
            ),
            (
                "time filter, a keyword of 6 characters",
                Request {
                    filter: Filter {
                        from: Some(10),
                        to: Some(2_900),
                        ..Filter::default()
                    },
                    ..Request::newest_first(parse_query("흔한말입니다"), 10)
                },
            ),
        ];
        for (what, request) in requests {
            let windowed = request.filter.from.is_some();
            if !windowed {
                work(&generation, &request);
            }
            let visited = work(&generation, &request);
            let page = (request.limit as u64 + 1) * 3;
            assert_eq!(
                is_heavy(&request),
                visited > page,
                "{what}: visited {visited} matches, the page is {page}"
            );
        }
    }
}
