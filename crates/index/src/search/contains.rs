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
//!
//! A candidate whose text cannot be read is neither counted nor dropped:
//! either would change a total with no error. The scorer stops, and the
//! failure is kept in the search's [`ReadFailures`], which the scan checks
//! before it reports anything (and before a keyword's documents are kept
//! as a bitset), so the search fails instead of answering.

use std::sync::{Arc, Mutex};

use memchr::memmem::Finder;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::store::StoreReader;
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

use chaja_core::text::normalize;

use crate::schema::Fields;
use crate::{stored, IndexError};

/// The first candidate text one search could not read, shared by every
/// [`ContainsQuery`] of the search (clones share it).
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadFailures(Arc<Mutex<Option<String>>>);

impl ReadFailures {
    fn record(&self, what: String) {
        let mut first = self.0.lock().expect("read failures lock poisoned");
        first.get_or_insert(what);
    }

    /// An error when a candidate's text could not be read.
    pub(crate) fn check(&self) -> Result<(), IndexError> {
        let first = self.0.lock().expect("read failures lock poisoned");
        match &*first {
            Some(what) => Err(IndexError::Unreadable(what.clone())),
            None => Ok(()),
        }
    }
}

/// The rows of `candidates` whose text contains `keyword` (normalized).
#[derive(Debug)]
pub(super) struct ContainsQuery {
    candidates: Box<dyn Query>,
    keyword: String,
    fields: Fields,
    failures: ReadFailures,
}

impl ContainsQuery {
    pub(super) fn new(
        candidates: Box<dyn Query>,
        keyword: &str,
        fields: &Fields,
        failures: &ReadFailures,
    ) -> ContainsQuery {
        ContainsQuery {
            candidates,
            keyword: keyword.to_owned(),
            fields: fields.clone(),
            failures: failures.clone(),
        }
    }
}

impl Clone for ContainsQuery {
    fn clone(&self) -> ContainsQuery {
        ContainsQuery {
            candidates: self.candidates.box_clone(),
            keyword: self.keyword.clone(),
            fields: self.fields.clone(),
            failures: self.failures.clone(),
        }
    }
}

impl Query for ContainsQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(ContainsWeight {
            candidates: self.candidates.weight(enable_scoring)?,
            keyword: self.keyword.clone(),
            fields: self.fields.clone(),
            failures: self.failures.clone(),
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
    failures: ReadFailures,
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
            failures: self.failures.clone(),
            failed: false,
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
    failures: ReadFailures,
    /// A candidate's text could not be read: the scorer has stopped.
    failed: bool,
}

impl ContainsScorer {
    /// Whether document `doc`'s normalized title or content contains the
    /// keyword. A document the store cannot give back stops the scorer
    /// (see the module docs).
    fn holds(&mut self, doc: DocId) -> bool {
        let bytes = match self.store.get_document_bytes(doc) {
            Ok(bytes) => bytes,
            Err(e) => return self.fail(doc, &e.to_string()),
        };
        let stored = match stored::read(bytes.as_slice(), &self.fields) {
            Ok(stored) => stored,
            Err(e) => return self.fail(doc, &e.to_string()),
        };
        let holds = [stored.title, stored.content]
            .into_iter()
            .flatten()
            .any(|text| self.finder.find(normalize(text).as_bytes()).is_some());
        holds
    }

    /// Records that `doc`'s text could not be read, and stops.
    fn fail(&mut self, doc: DocId, error: &str) -> bool {
        tracing::error!(doc, error, "a candidate's stored text could not be read");
        self.failures
            .record(format!("document {doc}'s stored text: {error}"));
        self.failed = true;
        false
    }
}

impl DocSet for ContainsScorer {
    fn advance(&mut self) -> DocId {
        while !self.failed {
            let doc = self.candidates.advance();
            if doc == TERMINATED || self.holds(doc) {
                return doc;
            }
        }
        TERMINATED
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.failed {
            return TERMINATED;
        }
        let doc = self.candidates.seek(target);
        if doc == TERMINATED || self.holds(doc) {
            return doc;
        }
        self.advance()
    }

    fn doc(&self) -> DocId {
        match self.failed {
            true => TERMINATED,
            false => self.candidates.doc(),
        }
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
