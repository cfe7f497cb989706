//! Which path a search takes, chosen in one place.
//!
//! Every search scans the same ranges with the same loop (see `scan`).
//! What differs is how the matches past a range's final top-k are counted,
//! and, under `match=morph` relevance, whether the exact rows alone can
//! fill the page. Both depend only on the request and the generation's
//! fields, so [`Plan::choose`] decides them once, before any segment is
//! read, and the scan follows the plan instead of re-deriving it from the
//! request. What a plan's count is, [`Count`], lives beside the scan that
//! follows it.

use tantivy::query::{EnableScoring, Query};
use tantivy::Searcher;

use super::cached_keyword::CachedBits;
use super::contains::ReadFailures;
use super::exact_rows::{self, ExactRows};
use super::keyword_count;
use super::query::{build_query, Shared};
use super::request::{Request, Sort};
use super::scan::Count;
use super::statistics::RowStatistics;
use super::term_count;
use crate::patches::Patches;
use crate::schema::Fields;
use crate::{Result, View};

/// A search's path.
pub(super) struct Plan {
    /// The query whose matches are the request's rows, scored under
    /// `sort=relevance`.
    pub(super) query: Box<dyn Query>,
    /// How matches past the top-k are counted.
    pub(super) count: Count,
    /// Under `match=morph` relevance, the exact rows to try first (see
    /// `exact_rows`); `None` when the whole union is scanned.
    pub(super) exact_rows: Option<ExactRows>,
    /// Where its queries report a candidate they could not read (see
    /// `contains`): checked before a range's answer counts.
    pub(super) failures: ReadFailures,
}

impl Plan {
    /// The plan for `request` on `searcher`, whose long keywords read
    /// their kept bitsets from `cached`.
    pub(super) fn choose(
        fields: &Fields,
        request: &Request,
        searcher: &Searcher,
        patches: &std::sync::Arc<Patches>,
        cached: &CachedBits,
    ) -> Result<Plan> {
        let scoring = request.sort == Sort::Relevance;
        let failures = ReadFailures::default();
        let shared = Shared {
            cached: Some(cached),
            failures: &failures,
        };
        let query = build_query(fields, request, scoring, patches, shared);
        let count = match term_count::terms(fields, request) {
            Some(terms) => Count::Postings(terms),
            None => match keyword_count::keyword_sets(fields, request, searcher, &failures)? {
                Some(sets) => Count::Sets(sets),
                None => Count::Visit,
            },
        };
        let exact_rows = exact_rows::query(fields, request, shared);
        Ok(Plan {
            query,
            count,
            exact_rows,
            failures,
        })
    }

    /// The same plan without the exact rows' path: the whole union is
    /// scored, as before that path existed. What tests compare it with.
    #[cfg(test)]
    pub(super) fn whole_union(self) -> Plan {
        Plan {
            exact_rows: None,
            ..self
        }
    }

    /// The query's weight on `view`, scored under relevance over its rows
    /// (see `statistics`).
    pub(super) fn weight(
        &self,
        request: &Request,
        view: &View,
    ) -> Result<Box<dyn tantivy::query::Weight>> {
        if request.sort != Sort::Relevance {
            let unscored = EnableScoring::disabled_from_searcher(&view.searcher);
            return Ok(self.query.weight(unscored)?);
        }
        let statistics = RowStatistics::of(view);
        Ok(self.query.weight(statistics.scoring())?)
    }
}
