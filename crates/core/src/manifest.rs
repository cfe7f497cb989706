//! The keyword manifest: keywords by class with their exact row counts.
//!
//! `chaja seed` writes one for the rows it generated; the load test and the
//! benchmarks read it to search keywords whose totals are known, so a
//! figure can be checked as well as timed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Keywords by class with their exact row counts: in how many questions and
/// reviews (title or content, NFKC and lowercase) each occurs, which is
/// what `LIKE '%kw%'` and chaja's `total` return.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub seed: u64,
    /// Rows written by this seed run.
    pub rows: u64,
    /// `"2 chars ~10%"` → keywords, most typical first.
    pub classes: BTreeMap<String, Vec<KeywordCount>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeywordCount {
    pub keyword: String,
    pub rows: u64,
    pub share: f64,
}

impl Manifest {
    /// The first keyword of every class, in class order.
    pub fn representatives(&self) -> Vec<(String, KeywordCount)> {
        self.classes
            .iter()
            .filter_map(|(class, words)| words.first().map(|w| (class.clone(), w.clone())))
            .collect()
    }
}
