//! From keywords to tantivy queries: one term per keyword of up to four
//! characters (a rare trigram: a range of 4-grams and a term), a phrase of
//! the fewest 4-grams beyond (or, where a rare 4-gram has no positions,
//! its 4-grams' rows checked against their text); morphemes for relevance
//! and `match=morph`.

use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, InvertedIndexRangeQuery, Occur, PhraseQuery, Query,
    TermQuery,
};
use tantivy::schema::{IndexRecordOption, Term};

use chaja_core::text::Keyword;

use std::ops::Bound;
use std::sync::Arc;

use super::cached_keyword::{CachedBits, CachedKeywordQuery};
use super::contains::{ContainsQuery, ReadFailures};
use super::patched::PatchedQuery;
use super::request::Request;
use super::scored_by_terms::ScoredByTermsQuery;
use super::terms::{
    gram_field, long_key, morpheme_fields, morphemes, rare_trigram, term_query, Long,
};
use crate::patches::Patches;
use crate::schema::Fields;

/// Title matches weigh this much more than content matches in relevance.
pub(super) const TITLE_BOOST: f32 = 2.0;

/// Added to the score of rows that contain the exact substring, under
/// `match=morph`: more than any sum of BM25 scores of a short query, small
/// enough that f32 keeps BM25's differences beside it.
pub(super) const EXACT_TIER: f32 = 10_000.0;

/// What the queries of one search share.
#[derive(Clone, Copy)]
pub(super) struct Shared<'a> {
    /// Where long keywords' kept bitsets are (see `cached_keyword`), when
    /// they may be read.
    pub(super) cached: Option<&'a CachedBits>,
    /// Where a candidate whose text cannot be read is reported (see
    /// `contains`).
    pub(super) failures: &'a ReadFailures,
}

impl Shared<'static> {
    /// Nothing cached, and failures reported nowhere a search reads: for
    /// tests that compare a query with tantivy's own answer.
    #[cfg(test)]
    pub(super) fn uncached() -> Shared<'static> {
        static NOWHERE: std::sync::OnceLock<ReadFailures> = std::sync::OnceLock::new();
        Shared {
            cached: None,
            failures: NOWHERE.get_or_init(ReadFailures::default),
        }
    }
}

/// The query of a request: the substring set (or, with `match=morph`, the
/// substring set plus morpheme matches), scored for relevance when asked.
/// `patches` are the attribute patches of the searcher it runs on.
pub(crate) fn build_query(
    fields: &Fields,
    request: &Request,
    scoring: bool,
    patches: &Arc<Patches>,
    shared: Shared,
) -> Box<dyn Query> {
    // Only relevance and morpheme matching look at morphemes: a newest-first
    // substring search skips the dictionary lookup.
    let morphemes: Vec<String> = if request.morph || scoring {
        morphemes(request)
    } else {
        Vec::new()
    };
    let text: Box<dyn Query> = if morphemes.is_empty() {
        substring_query(fields, request, scoring, shared)
    } else if request.morph {
        let exact = substring_query(fields, request, false, shared);
        Box::new(BooleanQuery::new(vec![
            (
                Occur::Should,
                Box::new(ConstScoreQuery::new(exact, EXACT_TIER)),
            ),
            (Occur::Should, morph_query(fields, &morphemes, Occur::Must)),
        ]))
    } else if scoring {
        // The set is the substring set; morphemes only score it.
        let exact = substring_query(fields, request, false, shared);
        Box::new(ScoredByTermsQuery::new(
            exact,
            morph_terms(fields, &morphemes),
        ))
    } else {
        substring_query(fields, request, false, shared)
    };
    let mut must: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text)];
    for (name, value) in &request.filter.attributes {
        let term = Term::from_field_text(fields.attrs, &format!("{name}={value}"));
        let mut query: Box<dyn Query> = Box::new(TermQuery::new(term, IndexRecordOption::Basic));
        if !patches.is_empty() {
            // The term's postings hold what documents said before their
            // patches: patched documents are all candidates, checked by
            // the scan against their patches.
            query = Box::new(BooleanQuery::new(vec![
                (Occur::Should, query),
                (Occur::Should, Box::new(PatchedQuery(patches.clone()))),
            ]));
        }
        // Must, but without adding to the score.
        must.push((Occur::Must, Box::new(BoostQuery::new(query, 0.0))));
    }
    if must.len() == 1 {
        return must.pop().expect("one clause").1;
    }
    Box::new(BooleanQuery::new(must))
}

/// The rows whose normalized title or content contains every keyword (or,
/// for a keyword with synonyms, any of its forms); unscored, a long one is
/// read from its kept bitsets where `shared.cached` has them.
pub(super) fn substring_query(
    fields: &Fields,
    request: &Request,
    scoring: bool,
    shared: Shared,
) -> Box<dyn Query> {
    let mut must: Vec<(Occur, Box<dyn Query>)> = (0..request.keywords.len())
        .map(|i| {
            let mut forms: Vec<(Occur, Box<dyn Query>)> = request
                .forms(i)
                .map(|k| {
                    let query = keyword_query(fields, k, scoring, shared.failures);
                    let query: Box<dyn Query> = match shared.cached {
                        Some(kept) if !scoring && k.char_len() > 4 => Box::new(
                            CachedKeywordQuery::new(query, long_key(fields, k), kept.clone()),
                        ),
                        _ => query,
                    };
                    (Occur::Should, query)
                })
                .collect();
            let clause = if forms.len() == 1 {
                forms.pop().expect("one form").1
            } else {
                Box::new(BooleanQuery::new(forms))
            };
            (Occur::Must, clause)
        })
        .collect();
    if must.len() == 1 {
        return must.pop().expect("one clause").1;
    }
    Box::new(BooleanQuery::new(must))
}

/// Each morpheme in the title (boosted) or the content; `occur` says whether
/// every morpheme must be there or each only adds to the score.
pub(super) fn morph_query(fields: &Fields, morphemes: &[String], occur: Occur) -> Box<dyn Query> {
    let clauses = morphemes
        .iter()
        .map(|m| {
            let in_title = term_query(fields.title_morph, m, IndexRecordOption::WithFreqs);
            let in_content = term_query(fields.content_morph, m, IndexRecordOption::WithFreqs);
            let either: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
                (
                    Occur::Should,
                    Box::new(BoostQuery::new(in_title, TITLE_BOOST)),
                ),
                (Occur::Should, in_content),
            ]));
            (occur, either)
        })
        .collect();
    Box::new(BooleanQuery::new(clauses))
}

/// Each morpheme as a title term (boosted) and a content term: what
/// [`morph_query`] sums, for [`ScoredByTermsQuery`].
pub(super) fn morph_terms(fields: &Fields, morphemes: &[String]) -> Vec<(Term, f32)> {
    morpheme_fields(fields, morphemes)
        .into_iter()
        .flat_map(|[title, content]| [(title, TITLE_BOOST), (content, 1.0)])
        .collect()
}

pub(super) fn keyword_query(
    fields: &Fields,
    keyword: &Keyword,
    scoring: bool,
    failures: &ReadFailures,
) -> Box<dyn Query> {
    let text = keyword.as_str();
    match gram_field(fields, keyword) {
        // Only 4-grams keep frequencies, for BM25.
        Some(field) if field == fields.grams4 && scoring => {
            term_query(field, text, IndexRecordOption::WithFreqs)
        }
        Some(field) => term_query(field, text, IndexRecordOption::Basic),
        None if rare_trigram(fields, keyword) => rare_trigram_query(fields, text),
        None => match Long::of(fields, text) {
            Long::Phrase(terms) => Box::new(PhraseQuery::new_with_offset(terms)),
            Long::Contains(terms) => {
                let all = terms
                    .into_iter()
                    .map(|term| {
                        // Only `grams4` keeps frequencies, for BM25.
                        let option = match term.field() == fields.grams4 && scoring {
                            true => IndexRecordOption::WithFreqs,
                            false => IndexRecordOption::Basic,
                        };
                        let query: Box<dyn Query> = Box::new(TermQuery::new(term, option));
                        (Occur::Must, query)
                    })
                    .collect();
                Box::new(ContainsQuery::new(
                    Box::new(BooleanQuery::new(all)),
                    text,
                    fields,
                    failures,
                ))
            }
        },
    }
}

/// The rows that hold a rare trigram: those with a 4-gram that starts with
/// it (the terms of `grams4` and `grams4_rare` from the trigram to the
/// trigram and the last character, all of them four characters long), and
/// those whose text ends with it, which `grams3` holds. A rare trigram's
/// 4-grams are few and rare: ORed into a bitset of the segment, at 1M rows
/// p99 0.32 ms.
fn rare_trigram_query(fields: &Fields, trigram: &str) -> Box<dyn Query> {
    let last = format!("{trigram}{}", char::MAX);
    let starting = |field| -> Box<dyn Query> {
        Box::new(InvertedIndexRangeQuery::new(
            Bound::Included(Term::from_field_text(field, trigram)),
            Bound::Included(Term::from_field_text(field, &last)),
        ))
    };
    let mut any = vec![(
        Occur::Should,
        term_query(fields.grams3, trigram, IndexRecordOption::Basic),
    )];
    any.push((Occur::Should, starting(fields.grams4)));
    if !fields.fourgrams.holds_every() {
        any.push((Occur::Should, starting(fields.grams4_rare)));
    }
    Box::new(BooleanQuery::new(any))
}
