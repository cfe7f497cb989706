//! Attribute patches: a row whose attributes changed (a like count, a
//! rating) and nothing else, applied without rewriting its document.
//!
//! tantivy cannot change a document in place, and rewriting a row costs its
//! Korean analysis and some 6,000 grams for ~1,500 characters: about 3 ms
//! of CPU, so a counter that a site bumps 500 times a second and that
//! chaja returns as an attribute would keep the mirror seconds behind. So
//! an update whose text, time and key equal the document's
//! (`Doc::text_digest`) is written as a *patch*: a tiny document of its own
//! in the same index, holding the row's `key` term in `patch`, its current
//! attributes (stored JSON, as a hit shows them) and its content digest.
//! This is Lucene's doc-values update, kept as documents:
//!
//! - A patch is written and committed with the checkpoint like any
//!   document, so it is exactly as durable, and a replay writes it again
//!   (idempotent: the writer deletes the row's older patch first).
//! - It has no text, so no query matches it, and its `created_at` sorts it
//!   after every row of its segment and outside every time window.
//! - A text change rewrites the document and drops its patch; a delete
//!   drops both; an update back to the document's own attributes drops
//!   the patch. Merges carry patches like documents, and a rebuild reads
//!   every row anew, with none.
//!
//! When the reader reloads, [`Patches::next`] reads the live patches
//! (each segment's once: segments never change but for deletes) and finds
//! each one's document in the segments, by its key. A search reads a
//! `View`: a searcher and the patches of the same reload, so the two never
//! disagree. Everything that reads attributes looks at a patched document's
//! patch instead of what its document holds:
//!
//! - a hit shows the patch's attributes;
//! - `attr.<name>=<value>` matches, besides the postings of its term
//!   (which hold documents' old values), every patched document
//!   ([`PatchedQuery`]), and the scan checks those against their patches;
//! - ranges, attribute orders and facet counts read a patched document's
//!   number or value from its patch (see `attributes::SegmentAttrs`);
//! - per-segment totals and facet counts of requests that read attributes
//!   are cached under the segment's patch stamp, which moves whenever its
//!   patched documents do;
//! - the indexer compares a row with its patch's digest, and `verify`
//!   with the same.
//!
//! What a patch costs a search is one bit per document of a segment that
//! has patched documents, read only by requests that read attributes.
//! Relevance sees patches only as documents in tantivy's document count,
//! which BM25's idf reads: a few thousand patches in a million rows move
//! scores by well under a percent.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tantivy::index::SegmentId;
use tantivy::query::{ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocId, DocSet, Searcher, SegmentReader, TantivyDocument, Term, TERMINATED};

use chaja_core::model::AttrValue;

use crate::attributes::AttrLayout;
use crate::schema::Fields;
use crate::uid::parse_key_term;
use crate::writer::{for_each_live_key, PATCH_TIME};

/// A row's attributes as a patch holds them.
#[derive(Debug)]
pub struct Patch {
    /// The row's attributes as the database has them now.
    attributes: Vec<(String, AttrValue)>,
    /// The same, as the JSON object a hit shows.
    pub(crate) json: String,
    /// The row's content digest with these attributes (`Doc::digest`).
    pub(crate) digest: u64,
    /// The numbers of the attributes its source declares numeric, and the
    /// values of those it declares facets: what the document's columns
    /// would hold (see `AttrLayout::add_columns`).
    numbers: Vec<(String, f64)>,
    facets: Vec<(String, String)>,
}

impl Patch {
    fn new(json: String, digest: u64, numeric: &[String], facets: &[String]) -> Patch {
        let attributes: Vec<(String, AttrValue)> = match serde_json::from_str(&json) {
            Ok(serde_json::Value::Object(map)) => map
                .into_iter()
                .map(|(name, value)| (name, from_json(value)))
                .collect(),
            _ => Vec::new(),
        };
        let value_of = |name: &String| attributes.iter().find(|(n, _)| n == name).map(|a| &a.1);
        let numbers = numeric
            .iter()
            .filter_map(|name| Some((name.clone(), value_of(name)?.number()?)))
            .collect();
        let facets = facets
            .iter()
            .filter_map(|name| Some((name.clone(), value_of(name)?.filter_text()?)))
            .collect();
        Patch {
            attributes,
            json,
            digest,
            numbers,
            facets,
        }
    }

    /// A numeric attribute's number; `None` when the row has none there.
    pub(crate) fn number(&self, name: &str) -> Option<f64> {
        self.numbers.iter().find(|(n, _)| n == name).map(|n| n.1)
    }

    /// A facet's value.
    pub(crate) fn facet(&self, name: &str) -> Option<&str> {
        self.facets
            .iter()
            .find(|(n, _)| n == name)
            .map(|f| f.1.as_str())
    }

    /// Whether `attr.<name>=<value>` matches the row.
    pub(crate) fn has_value(&self, name: &str, value: &str) -> bool {
        self.attributes
            .iter()
            .any(|(n, v)| n == name && v.filter_text().as_deref() == Some(value))
    }
}

/// The inverse of `AttrValue::to_json`, which writes integers as numbers
/// and text as strings.
fn from_json(value: serde_json::Value) -> AttrValue {
    match value {
        serde_json::Value::Null => AttrValue::Null,
        serde_json::Value::String(s) => AttrValue::Str(s),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Str(n.to_string()),
        },
        other => AttrValue::Str(other.to_string()),
    }
}

/// One segment's patched documents.
pub(crate) struct SegmentPatches {
    /// The patched documents, in doc id order.
    docs: Arc<[DocId]>,
    /// Their keys and patches, in the same order.
    patches: Vec<(Arc<str>, Arc<Patch>)>,
    /// One bit per document of the segment: patched or not, the check a
    /// scan makes per match.
    bits: Vec<u64>,
    /// Moves whenever which documents are patched, or how, changes: part of
    /// the key that per-segment counts reading attributes are cached under.
    pub(crate) stamp: u64,
}

/// Source of patch stamps, unique within the process.
static STAMPS: AtomicU64 = AtomicU64::new(1);

impl SegmentPatches {
    fn new(max_doc: DocId, mut entries: Vec<(DocId, Arc<str>, Arc<Patch>)>) -> SegmentPatches {
        entries.sort_unstable_by_key(|e| e.0);
        entries.dedup_by_key(|e| e.0);
        let mut bits = vec![0u64; (max_doc as usize).div_ceil(64)];
        for (doc, _, _) in &entries {
            bits[*doc as usize / 64] |= 1 << (doc % 64);
        }
        SegmentPatches {
            docs: entries.iter().map(|e| e.0).collect(),
            patches: entries.into_iter().map(|(_, k, p)| (k, p)).collect(),
            bits,
            stamp: STAMPS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// `doc`'s patch, if it has one.
    #[inline]
    pub(crate) fn get(&self, doc: DocId) -> Option<&Patch> {
        let word = self.bits.get(doc as usize / 64)?;
        if word & (1 << (doc % 64)) == 0 {
            return None;
        }
        let i = self.docs.binary_search(&doc).ok()?;
        Some(&self.patches[i].1)
    }

    fn entries(&self) -> impl Iterator<Item = (DocId, &Arc<str>, &Arc<Patch>)> {
        self.docs
            .iter()
            .zip(&self.patches)
            .map(|(doc, (key, patch))| (*doc, key, patch))
    }
}

/// The patches written in one segment, alive or not: read once per
/// segment, since a segment never changes but for deletes.
pub(crate) type Written = Arc<[(DocId, Arc<str>, Arc<Patch>)]>;

/// The live patches of a searcher's segments, and where their documents
/// are.
#[derive(Default)]
pub struct Patches {
    by_key: HashMap<Arc<str>, Arc<Patch>>,
    /// The segments that hold patched documents.
    segments: HashMap<SegmentId, Arc<SegmentPatches>>,
    /// Every segment these were found for, patched or not.
    seen: HashSet<SegmentId>,
    /// Live patch documents: what `Generation::num_docs` leaves out.
    pub(crate) documents: u64,
}

impl std::fmt::Debug for Patches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Patches")
            .field("rows", &self.by_key.len())
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl Patches {
    /// Rows whose attributes are patched.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The patch of the row whose `key` term this is.
    pub(crate) fn get(&self, key_term: &str) -> Option<&Arc<Patch>> {
        self.by_key.get(key_term)
    }

    /// The patched documents of a segment, if it has any.
    pub(crate) fn segment(&self, id: SegmentId) -> Option<&Arc<SegmentPatches>> {
        self.segments.get(&id)
    }

    /// Each patched row's `key` term, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(|key| &**key)
    }

    /// Each patched row's `key` term and content digest.
    pub fn digests(&self) -> impl Iterator<Item = (&str, u64)> {
        self.by_key
            .iter()
            .map(|(key, patch)| (&**key, patch.digest))
    }

    /// The patches of `searcher`'s segments, found from `previous` (those
    /// of the searcher before): only the segments that are new, and the
    /// rows whose patch came, went or changed, are looked up. `written`
    /// keeps each segment's patches as read, across calls. Blocking.
    pub(crate) fn next(
        previous: &Patches,
        searcher: &Searcher,
        written: &mut HashMap<SegmentId, Written>,
        fields: &Fields,
        layout: &AttrLayout,
    ) -> crate::Result<Patches> {
        let segments = searcher.segment_readers();
        let mut by_key: HashMap<Arc<str>, Arc<Patch>> = HashMap::new();
        let mut documents = 0;
        let mut seen = HashSet::with_capacity(segments.len());
        for segment in segments {
            let id = segment.segment_id();
            seen.insert(id);
            let patches = match written.get(&id) {
                Some(patches) => patches.clone(),
                None => {
                    let patches = read_written(segment, fields, layout)?;
                    written.insert(id, patches.clone());
                    patches
                }
            };
            let alive = segment.alive_bitset();
            for (doc, key, patch) in patches.iter() {
                if alive.is_none_or(|a| a.is_alive(*doc)) {
                    documents += 1;
                    by_key.insert(key.clone(), patch.clone());
                }
            }
        }
        written.retain(|id, _| seen.contains(id));
        let mut found_in: HashMap<SegmentId, Arc<SegmentPatches>> = HashMap::new();
        if !by_key.is_empty() {
            let digest =
                |map: &HashMap<Arc<str>, Arc<Patch>>, key: &str| map.get(key).map(|p| p.digest);
            let changed: HashSet<Arc<str>> = previous
                .by_key
                .keys()
                .chain(by_key.keys())
                .filter(|key| digest(&previous.by_key, key) != digest(&by_key, key))
                .cloned()
                .collect();
            for segment in segments {
                let id = segment.segment_id();
                let found = if previous.seen.contains(&id) {
                    let before = previous.segments.get(&id);
                    if changed.is_empty() {
                        before.cloned()
                    } else {
                        // Keep what did not change, look up what did.
                        let mut entries = Vec::new();
                        let mut dropped = 0;
                        for (doc, key, patch) in before.into_iter().flat_map(|b| b.entries()) {
                            if changed.contains(key) {
                                dropped += 1;
                            } else {
                                entries.push((doc, key.clone(), patch.clone()));
                            }
                        }
                        let keys = changed
                            .iter()
                            .filter_map(|key| Some((key.clone(), by_key.get(key)?)));
                        let added = look_up(segment, fields, keys, &mut entries)?;
                        if dropped + added == 0 {
                            before.cloned()
                        } else {
                            (!entries.is_empty())
                                .then(|| Arc::new(SegmentPatches::new(segment.max_doc(), entries)))
                        }
                    }
                } else {
                    let mut entries = Vec::new();
                    // A term lookup costs about as much as reading five
                    // keys of the segment's column.
                    if by_key.len() * 5 < segment.num_docs() as usize {
                        let keys = by_key.iter().map(|(k, p)| (k.clone(), p));
                        look_up(segment, fields, keys, &mut entries)?;
                    } else {
                        for_each_live_key(segment, |doc, key| {
                            if let Some((key, patch)) = by_key.get_key_value(key) {
                                entries.push((doc, key.clone(), patch.clone()));
                            }
                        })?;
                    }
                    (!entries.is_empty())
                        .then(|| Arc::new(SegmentPatches::new(segment.max_doc(), entries)))
                };
                if let Some(found) = found {
                    found_in.insert(id, found);
                }
            }
        }
        Ok(Patches {
            by_key,
            segments: found_in,
            seen,
            documents,
        })
    }
}

/// Adds to `entries` the live document of `segment` whose key each of
/// `keys` is, with its patch. Returns how many were found.
fn look_up<'a>(
    segment: &SegmentReader,
    fields: &Fields,
    keys: impl Iterator<Item = (Arc<str>, &'a Arc<Patch>)>,
    entries: &mut Vec<(DocId, Arc<str>, Arc<Patch>)>,
) -> tantivy::Result<usize> {
    let inverted = segment.inverted_index(fields.key)?;
    let alive = segment.alive_bitset();
    let mut found = 0;
    for (key, patch) in keys {
        let term = Term::from_field_text(fields.key, &key);
        let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)? else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                entries.push((doc, key.clone(), patch.clone()));
                found += 1;
            }
            doc = postings.advance();
        }
    }
    Ok(found)
}

/// The patches `segment` holds, alive or not. They sort last (see
/// `PATCH_TIME`), so they are the segment's tail from the first document
/// at that time.
fn read_written(
    segment: &SegmentReader,
    fields: &Fields,
    layout: &AttrLayout,
) -> tantivy::Result<Written> {
    let Some(keys) = segment.fast_fields().str("patch")? else {
        return Ok(Arc::from([]));
    };
    let created = segment.fast_fields().i64("created_at")?;
    let digests = segment.fast_fields().u64("digest")?;
    let is_patch_time = |doc: DocId| created.first(doc) == Some(PATCH_TIME);
    let (mut lo, mut hi) = (0, segment.max_doc());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if is_patch_time(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let store = segment.get_store_reader(1)?;
    let mut out = Vec::new();
    let mut key = String::new();
    for doc in lo..segment.max_doc() {
        let Some(ord) = keys.term_ords(doc).next() else {
            continue;
        };
        key.clear();
        if !keys.ord_to_str(ord, &mut key)? {
            continue;
        }
        let Some((source, _)) = parse_key_term(&key) else {
            continue;
        };
        let stored: TantivyDocument = store.get(doc)?;
        let json = stored
            .get_first(fields.attributes)
            .and_then(|v| v.as_str())
            .unwrap_or("{}")
            .to_owned();
        let digest = digests.first(doc).unwrap_or_default();
        let patch = Patch::new(json, digest, layout.numeric(source), layout.facets(source));
        out.push((doc, Arc::from(key.as_str()), Arc::new(patch)));
    }
    Ok(Arc::from(out))
}

/// Matches every patched document: the other half of an
/// `attr.<name>=<value>` filter, whose term's postings hold what documents
/// said before their patches (the scan checks these against the patch).
#[derive(Clone, Debug)]
pub(crate) struct PatchedQuery(pub(crate) Arc<Patches>);

impl Query for PatchedQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(PatchedWeight(self.0.clone())))
    }
}

struct PatchedWeight(Arc<Patches>);

impl Weight for PatchedWeight {
    fn scorer(&self, reader: &SegmentReader, boost: f32) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.0.segment(reader.segment_id()) {
            Some(patched) => Box::new(ConstScorer::new(DocList::new(patched.docs.clone()), boost)),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let patched = self
            .0
            .segment(reader.segment_id())
            .is_some_and(|p| p.get(doc).is_some());
        if !patched {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} is not patched"
            )));
        }
        Ok(Explanation::new("patched", 1.0))
    }
}

/// A sorted list of documents as a doc set. tantivy's `VecDocSet` would
/// copy the list for every scorer and seek one document at a time.
struct DocList {
    docs: Arc<[DocId]>,
    at: usize,
}

impl DocList {
    fn new(docs: Arc<[DocId]>) -> DocList {
        DocList { docs, at: 0 }
    }
}

impl DocSet for DocList {
    fn advance(&mut self) -> DocId {
        self.at = (self.at + 1).min(self.docs.len());
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc() < target {
            self.at += self.docs[self.at..].partition_point(|&d| d < target);
        }
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.at) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doc_list_advances_and_seeks_like_its_list() {
        let mut docs = DocList::new(Arc::from(vec![2, 5, 9, 40]));
        assert_eq!(docs.doc(), 2);
        assert_eq!(docs.seek(1), 2);
        assert_eq!(docs.seek(6), 9);
        assert_eq!(docs.seek(9), 9);
        assert_eq!(docs.advance(), 40);
        assert_eq!(docs.seek(41), TERMINATED);
        assert_eq!(docs.advance(), TERMINATED);
        assert_eq!(DocList::new(Arc::from(vec![])).doc(), TERMINATED);
    }

    #[test]
    fn a_patch_reads_back_what_the_writer_stored() {
        let json = crate::writer::attributes_json(&[
            ("likes".to_owned(), AttrValue::Int(-3)),
            ("rating".to_owned(), AttrValue::Str("4.5".to_owned())),
            ("tag".to_owned(), AttrValue::Null),
        ]);
        let patch = Patch::new(json, 7, &["likes".to_owned()], &["rating".to_owned()]);
        assert_eq!(patch.number("likes"), Some(-3.0));
        assert_eq!(patch.number("rating"), None, "not declared numeric");
        assert_eq!(patch.facet("rating"), Some("4.5"));
        assert!(patch.has_value("likes", "-3"));
        assert!(!patch.has_value("likes", "3"));
        assert!(!patch.has_value("tag", ""), "NULL matches no value");
        let bits = SegmentPatches::new(
            100,
            vec![
                (64, Arc::from("0:1"), Arc::new(patch)),
                (
                    3,
                    Arc::from("0:2"),
                    Arc::new(Patch::new("{}".into(), 1, &[], &[])),
                ),
            ],
        );
        assert!(bits.get(64).is_some_and(|p| p.digest == 7));
        assert!(bits.get(3).is_some_and(|p| p.digest == 1));
        assert!(bits.get(4).is_none() && bits.get(99).is_none() && bits.get(1000).is_none());
    }
}
