//! `sort=relevance`: the substring set decides which rows match, and the
//! BM25 scores of the query's morphemes rank them.
//!
//! The plain way to say that in tantivy is a `BooleanQuery`: the set as a
//! MUST clause with boost 0, each morpheme's title and content terms as
//! SHOULD clauses. Its scorer moves the SHOULD side through a union that is
//! refilled a window of 4,096 documents at a time, and a refill scores
//! every document of every posting list in the window, rows outside the
//! set included. A frequent morpheme (있 is in nearly every row) then costs
//! a BM25 computation for every row of a window around each match, and the
//! nested unions (a union per morpheme inside a union of morphemes) pay it
//! twice. At 1M rows, relevance over two words with a frequent one was the
//! tail of the first queries.
//!
//! [`ScoredByTermsQuery`] matches exactly the set's rows and scores a row only
//! when asked: each term's scorer is moved to that row (a seek within a
//! decoded block, mostly) and scores it if it holds the term. The set is
//! read with scoring off, so a phrase stops at its first occurrence in a
//! row instead of counting them all. The score is the same sum of the same
//! BM25 weights (tantivy's, from the whole index's statistics); only the
//! order of the additions differs, so it may differ in the last bits.

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, TermQuery, Weight};
use tantivy::schema::{IndexRecordOption, Term};
use tantivy::{DocId, DocSet, Score, SegmentReader};

/// The rows of `set`, scored by the sum of `terms`' BM25 scores, each times
/// its boost.
#[derive(Debug)]
pub(super) struct ScoredByTermsQuery {
    set: Box<dyn Query>,
    terms: Vec<(Term, Score)>,
}

impl ScoredByTermsQuery {
    pub(super) fn new(set: Box<dyn Query>, terms: Vec<(Term, Score)>) -> ScoredByTermsQuery {
        ScoredByTermsQuery { set, terms }
    }
}

impl Clone for ScoredByTermsQuery {
    fn clone(&self) -> ScoredByTermsQuery {
        ScoredByTermsQuery::new(self.set.box_clone(), self.terms.clone())
    }
}

impl Query for ScoredByTermsQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let unscored = match enable_scoring {
            EnableScoring::Enabled { searcher, .. } => {
                EnableScoring::disabled_from_searcher(searcher)
            }
            other => other,
        };
        let set = self.set.weight(unscored)?;
        let terms = self
            .terms
            .iter()
            .map(|(term, boost)| {
                let query = TermQuery::new(term.clone(), IndexRecordOption::WithFreqs);
                Ok((query.weight(enable_scoring)?, *boost))
            })
            .collect::<tantivy::Result<_>>()?;
        Ok(Box::new(ScoredByTermsWeight { set, terms }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.set.query_terms(visitor);
        for (term, _) in &self.terms {
            visitor(term, false);
        }
    }
}

struct ScoredByTermsWeight {
    set: Box<dyn Weight>,
    terms: Vec<(Box<dyn Weight>, Score)>,
}

impl Weight for ScoredByTermsWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let set = self.set.scorer(reader, 1.0)?;
        let terms = self
            .terms
            .iter()
            .map(|(weight, own)| weight.scorer(reader, boost * own))
            .collect::<tantivy::Result<_>>()?;
        Ok(Box::new(ScoredByTermsScorer { set, terms }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        Ok(Explanation::new(
            "sum of the terms' BM25 scores",
            scorer.score(),
        ))
    }
}

struct ScoredByTermsScorer {
    set: Box<dyn Scorer>,
    /// Each only ever moves forward, to the row being scored: the rows are
    /// visited in order, and a row never scored is never read.
    terms: Vec<Box<dyn Scorer>>,
}

impl DocSet for ScoredByTermsScorer {
    fn advance(&mut self) -> DocId {
        self.set.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.set.seek(target)
    }

    fn fill_buffer(&mut self, buffer: &mut [DocId; tantivy::COLLECT_BLOCK_BUFFER_LEN]) -> usize {
        self.set.fill_buffer(buffer)
    }

    fn doc(&self) -> DocId {
        self.set.doc()
    }

    fn size_hint(&self) -> u32 {
        self.set.size_hint()
    }
}

impl Scorer for ScoredByTermsScorer {
    fn score(&mut self) -> Score {
        let doc = self.set.doc();
        let mut score = 0.0;
        for term in &mut self.terms {
            if term.doc() < doc {
                term.seek(doc);
            }
            if term.doc() == doc {
                score += term.score();
            }
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use tantivy::query::{BooleanQuery, BoostQuery, Occur};

    use chaja_core::model::{Doc, Key};
    use chaja_core::sources::SourceId;
    use chaja_core::text::parse_query;

    use super::super::query::{morph_query, morph_terms, substring_query, Shared};
    use super::super::request::{Request, Sort};
    use super::*;
    use crate::create_generation;

    const WORDS: [&str; 10] = [
        "설정",
        "있습니다",
        "서버",
        "배포",
        "스프링",
        "오류",
        "캐시",
        "검색",
        "서버를",
        "설정이",
    ];

    /// Each document of each segment `query` matches, with its score.
    fn scored(generation: &crate::Generation, query: &dyn Query) -> Vec<Vec<(DocId, Score)>> {
        let view = generation.view();
        let weight = query
            .weight(EnableScoring::enabled_from_searcher(&view.searcher))
            .unwrap();
        view.searcher
            .segment_readers()
            .iter()
            .map(|segment| {
                let mut scorer = weight.scorer(segment, 1.0).unwrap();
                let mut found = Vec::new();
                while scorer.doc() != tantivy::TERMINATED {
                    found.push((scorer.doc(), scorer.score()));
                    scorer.advance();
                }
                found
            })
            .collect()
    }

    /// Every document of the substring set, and no other, gets the score
    /// tantivy's `BooleanQuery` gives it (the set as MUST with boost 0, the
    /// morphemes as SHOULD), over several segments with deletes, for
    /// keywords that are terms, phrases and ANDs, frequent and rare, and
    /// inflected words that hold a keyword without being its morpheme.
    #[test]
    fn rows_and_scores_are_the_boolean_querys() {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer(32 << 20).unwrap();
        let mut draws = crate::tests::Draws(0x2545_f491_4f6c_dd1d);
        let mut next = |n: usize| draws.below(n as u64) as usize;
        for id in 0..600i64 {
            // 있습니다 in most rows, the other words in fewer.
            let mut words = vec![WORDS[1]];
            for _ in 0..next(12) {
                words.push(WORDS[next(WORDS.len())]);
            }
            let doc = Doc {
                source: SourceId::from_index(0),
                key: Key::Int(id),
                title: Some(WORDS[next(WORDS.len())].to_owned()),
                body: vec![words.join(" ")],
                created_at: 1_000 + id,
                attributes: Vec::new(),
            };
            writer.upsert(&doc).unwrap();
            if id % 7 == 3 {
                writer.delete(SourceId::from_index(0), &(id - 1).to_string());
            }
            if id % 200 == 199 {
                writer.commit(id).unwrap();
            }
        }
        writer.commit(600).unwrap();
        generation.reload().unwrap();
        assert!(generation.view().searcher.segment_readers().len() > 1);

        let fields = &generation.fields;
        let mut compared = 0;
        // The keywords, and their morphemes as a dictionary would find them
        // (서버를 is 서버 and a particle).
        for (q, morphemes) in [
            ("있습니다", "있습니다"),
            ("설정 있습니다", "설정 있습니다"),
            ("서버 배포", "서버 배포"),
            ("캐시", "캐시"),
            ("스프링 오류 검색", "스프링 오류 검색"),
            ("있습니다 설정 서버", "있습니다 설정 서버"),
            ("서버를", "서버"),
            ("설정이 배포", "설정 배포"),
        ] {
            let mut request = Request::newest_first(parse_query(q), 10);
            request.sort = Sort::Relevance;
            let morphemes: Vec<String> = morphemes.split(' ').map(str::to_owned).collect();
            let set = substring_query(fields, &request, false, Shared::uncached());
            let reference = BooleanQuery::new(vec![
                (Occur::Must, Box::new(BoostQuery::new(set.box_clone(), 0.0))),
                (
                    Occur::Should,
                    morph_query(fields, &morphemes, Occur::Should),
                ),
            ]);
            let ours = ScoredByTermsQuery::new(set, morph_terms(fields, &morphemes));
            let (want, got) = (scored(&generation, &reference), scored(&generation, &ours));
            for (want, got) in want.iter().zip(&got) {
                let docs = |s: &[(DocId, Score)]| s.iter().map(|(d, _)| *d).collect::<Vec<_>>();
                assert_eq!(docs(got), docs(want), "{q}: the rows");
                for ((doc, a), (_, b)) in want.iter().zip(got) {
                    assert!(
                        (a - b).abs() <= 1e-5 * a,
                        "{q}: row {doc} scores {b}, not {a}"
                    );
                    // A row that holds no morpheme scores 0 both ways.
                    compared += usize::from(*a > 0.0);
                }
            }
        }
        assert!(compared > 1_000, "only {compared} rows scored");
    }
}
