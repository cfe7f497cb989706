//! Where a search's scans run: in parallel on rayon's pool, or one after
//! another on the thread that asked.
//!
//! A search is cut into tasks, a range of documents each (a source's run
//! of a segment, see `order`), and alone on the machine it runs them on
//! rayon's pool, one per core, for the fastest answer. When other
//! searches already keep every core busy, the fan-out buys no core: each
//! task is handed to the pool, a pool thread is woken for it, and the
//! asking thread sleeps until the last one is done, for every search.
//! There the tasks run on the asking thread instead, one after another.
//! Never-seen queries at 100 users on 2 cores ran about 5% faster that
//! way (docs/benchmarks/043-one-thread-per-search-when-busy.md).
//! The answer is the same either way.

use rayon::prelude::*;

use super::budget::ScanError;

/// Where a search's tasks run (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fanout {
    /// In parallel on rayon's pool: the search has the cores to itself.
    Parallel,
    /// One after another on the calling thread: other searches keep the
    /// cores busy.
    Sequential,
}

impl Fanout {
    /// `Sequential` when `running` searches, this one included, are enough
    /// to keep `cores` busy without fanning out.
    pub fn for_load(running: usize, cores: usize) -> Fanout {
        match running >= cores {
            true => Fanout::Sequential,
            false => Fanout::Parallel,
        }
    }

    /// `f` of every task, in the tasks' order, stopping at the first error.
    pub(super) fn each<T: Sync, R: Send>(
        self,
        tasks: &[T],
        f: impl Fn(&T) -> Result<R, ScanError> + Sync + Send,
    ) -> Result<Vec<R>, ScanError> {
        match self {
            Fanout::Parallel => tasks.par_iter().map(f).collect(),
            Fanout::Sequential => tasks.iter().map(f).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use chaja_core::text::parse_query;

    use super::Fanout;
    use crate::search::keyword_count::tests::{index, under_each_filter};
    use crate::search::{search_budgeted, Budget, Request, Sort};

    /// Every kind of search answers the same on one thread as on the pool:
    /// hits, totals by source, page after page. The index has a run per
    /// source, and the pool's search cuts runs in halves too.
    #[test]
    fn one_thread_answers_as_the_pool() {
        let (_dir, generation, _docs) = index();
        let mut searched = 0;
        for q in [
            "있",
            "서버를",
            "있습니다.",
            "설정합니다 서버를",
            "\"가나다라마 설정합니다\"",
        ] {
            for (sort, morph) in [
                (Sort::Recent, false),
                (Sort::Oldest, false),
                (Sort::Relevance, false),
                (Sort::Relevance, true),
                (Sort::Recent, true),
            ] {
                let mut unfiltered = Request::newest_first(parse_query(q), 7);
                unfiltered.sort = sort.clone();
                unfiltered.morph = morph;
                unfiltered.now = 1_000;
                for mut request in under_each_filter(&unfiltered) {
                    let what = format!("{q} {sort:?} morph {morph} {:?}", request.filter);
                    let answer = |request: &Request, fanout| {
                        // Counted again, not read from the last search.
                        generation.caches.totals.invalidate_all();
                        search_budgeted(&generation, request, &Budget::unlimited(), fanout).unwrap()
                    };
                    loop {
                        let alone = answer(&request, Fanout::Sequential);
                        let pooled = answer(&request, Fanout::Parallel);
                        assert_eq!(alone, pooled, "{what}");
                        searched += usize::from(alone.total > 0);
                        match alone.hits.last() {
                            Some(last) if alone.hits.len() == request.limit => {
                                request.after = Some(last.rank)
                            }
                            _ => break,
                        }
                    }
                }
            }
        }
        assert!(searched > 100, "only {searched} pages found anything");
    }

    #[test]
    fn fans_out_only_while_a_core_would_sit_idle() {
        assert_eq!(Fanout::for_load(1, 2), Fanout::Parallel);
        assert_eq!(Fanout::for_load(2, 2), Fanout::Sequential);
        assert_eq!(Fanout::for_load(9, 2), Fanout::Sequential);
        assert_eq!(Fanout::for_load(3, 4), Fanout::Parallel);
        assert_eq!(Fanout::for_load(4, 4), Fanout::Sequential);
        // One core: the pool has no second thread to give.
        assert_eq!(Fanout::for_load(1, 1), Fanout::Sequential);
    }
}
