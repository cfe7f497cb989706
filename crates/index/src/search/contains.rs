//! A long keyword with a rare 4-gram, checked against the stored text.
//!
//! A generation may keep positions only for its common 4-grams (see
//! `common_grams`): the rare ones are in `grams4_rare`, doc ids only. A
//! keyword of five or more characters whose characters the common 4-grams
//! cannot all pin is then not a phrase. Its candidates are the rows that
//! hold every one of its 4-grams, few since one of them is rare, and
//! [`ContainsQuery`] keeps those whose normalized title or content contains the
//! keyword, read from the doc store: the same test as `LIKE`'s, and as
//! the brute-force oracle's (`chaja_core::text::row_matches`).
//!
//! Reading a candidate's text costs more than checking its positions
//! (its block of the doc store is decompressed), which is the latency a
//! smaller index pays. Candidates come in doc id order, so neighbours share
//! a block: the store reader keeps the last one.

use memchr::memmem::Finder;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::store::StoreReader;
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

use chaja_core::text::normalize;

use crate::schema::Fields;
use crate::stored;

/// The rows of `candidates` whose text contains `keyword` (normalized).
#[derive(Debug)]
pub(super) struct ContainsQuery {
    candidates: Box<dyn Query>,
    keyword: String,
    fields: Fields,
}

impl ContainsQuery {
    pub(super) fn new(candidates: Box<dyn Query>, keyword: &str, fields: &Fields) -> ContainsQuery {
        ContainsQuery {
            candidates,
            keyword: keyword.to_owned(),
            fields: fields.clone(),
        }
    }
}

impl Clone for ContainsQuery {
    fn clone(&self) -> ContainsQuery {
        ContainsQuery {
            candidates: self.candidates.box_clone(),
            keyword: self.keyword.clone(),
            fields: self.fields.clone(),
        }
    }
}

impl Query for ContainsQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(ContainsWeight {
            candidates: self.candidates.weight(enable_scoring)?,
            keyword: self.keyword.clone(),
            fields: self.fields.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.candidates.query_terms(visitor);
    }
}

struct ContainsWeight {
    candidates: Box<dyn Weight>,
    keyword: String,
    fields: Fields,
}

impl Weight for ContainsWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let candidates = self.candidates.scorer(reader, boost)?;
        let mut scorer = ContainsScorer {
            candidates,
            // Candidates ascend: only the block of the last one is read again.
            store: reader.get_store_reader(1)?,
            finder: Finder::new(self.keyword.as_bytes()).into_owned(),
            fields: self.fields.clone(),
        };
        let first = scorer.candidates.doc();
        if first != TERMINATED && !scorer.holds(first) {
            scorer.advance();
        }
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.candidates.explain(reader, doc)
    }
}

struct ContainsScorer {
    candidates: Box<dyn Scorer>,
    store: StoreReader,
    finder: Finder<'static>,
    fields: Fields,
}

impl ContainsScorer {
    /// Whether document `doc`'s normalized title or content contains the
    /// keyword. A document the store cannot give back is kept, and the
    /// error logged: it holds every 4-gram of the keyword, and an answer
    /// with one row too many is better than one that silently lacks it.
    fn holds(&self, doc: DocId) -> bool {
        let bytes = match self.store.get_document_bytes(doc) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::error!(doc, error = %e, "a candidate's stored text could not be read");
                return true;
            }
        };
        let stored = match stored::read(bytes.as_slice(), &self.fields) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::error!(doc, error = %e, "a candidate's stored text could not be read");
                return true;
            }
        };
        let holds = [stored.title, stored.content]
            .into_iter()
            .flatten()
            .any(|text| self.finder.find(normalize(text).as_bytes()).is_some());
        holds
    }
}

impl DocSet for ContainsScorer {
    fn advance(&mut self) -> DocId {
        loop {
            let doc = self.candidates.advance();
            if doc == TERMINATED || self.holds(doc) {
                return doc;
            }
        }
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let doc = self.candidates.seek(target);
        if doc == TERMINATED || self.holds(doc) {
            return doc;
        }
        self.advance()
    }

    fn doc(&self) -> DocId {
        self.candidates.doc()
    }

    fn size_hint(&self) -> u32 {
        self.candidates.size_hint()
    }
}

impl Scorer for ContainsScorer {
    fn score(&mut self) -> Score {
        self.candidates.score()
    }
}
