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
//!   (`search::patched`), and the scan checks those against their patches;
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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tantivy::index::SegmentId;
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocId, DocSet, Searcher, SegmentReader, TantivyDocument, Term, TERMINATED};

use chaja_core::model::AttrValue;
// foldhash: these maps are rebuilt at every reload, keyed by short keys,
// where std's SipHash showed in profiles of a storm of likes.
use foldhash::{HashMap, HashMapExt, HashSet};
use std::collections::BTreeMap;
// Per segment: few entries.
use std::collections::{HashMap as SegmentMap, HashSet as SegmentSet};

use crate::attr_layout::AttrLayout;
use crate::order::PATCH_TIME;
use crate::schema::Fields;
use crate::uid::{for_each_live_key, parse_key_term};

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
    pub(crate) docs: Arc<[DocId]>,
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
    fn new(max_doc: DocId, entries: &Placed) -> SegmentPatches {
        let mut bits = vec![0u64; (max_doc as usize).div_ceil(64)];
        for doc in entries.keys() {
            bits[*doc as usize / 64] |= 1 << (doc % 64);
        }
        SegmentPatches {
            docs: entries.keys().copied().collect(),
            patches: entries.values().cloned().collect(),
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

    fn entries(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<Patch>)> {
        self.patches.iter().map(|(key, patch)| (key, patch))
    }
}

/// The patches written in one segment, alive or not: read once per
/// segment, since a segment never changes but for deletes.
type Written = Arc<[(DocId, Arc<str>, Arc<Patch>)]>;
/// A segment's patched documents, each with its key and patch, in doc order.
type Placed = BTreeMap<DocId, (Arc<str>, Arc<Patch>)>;

/// The patches of one reload, as searches read them: each segment's
/// patched documents.
#[derive(Default)]
pub struct Patches {
    segments: SegmentMap<SegmentId, Arc<SegmentPatches>>,
    /// Rows whose documents are patched.
    rows: usize,
    /// Live patch documents: what `Generation::num_docs` leaves out.
    pub(crate) documents: u64,
}

impl std::fmt::Debug for Patches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Patches")
            .field("rows", &self.rows)
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl Patches {
    /// Rows whose attributes are patched.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The patched documents of a segment, if it has any.
    pub(crate) fn segment(&self, id: SegmentId) -> Option<&Arc<SegmentPatches>> {
        self.segments.get(&id)
    }

    /// The patch of document `doc` of segment `id`, if it has one.
    pub(crate) fn at(&self, id: SegmentId, doc: DocId) -> Option<&Patch> {
        self.segments.get(&id)?.get(doc)
    }

    /// Each patched row's `key` term and patch, in no particular order.
    fn entries(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<Patch>)> {
        self.segments.values().flat_map(|s| s.entries())
    }

    /// Each patched row's `key` term, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries().map(|(key, _)| &**key)
    }

    /// Each patched row's `key` term and content digest.
    pub fn digests(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries().map(|(key, patch)| (&**key, patch.digest))
    }
}

/// A row's live patch: its patch document, and the row's document once
/// found.
struct Row {
    patch_at: (SegmentId, DocId),
    patch: Arc<Patch>,
    doc: Option<(SegmentId, DocId)>,
}

/// A segment as the tracker last saw it.
struct Seen {
    written: Written,
    deleted: u32,
    max_doc: DocId,
}

/// What finds each reload's patches from the last one's: kept across
/// reloads (by `Generation`, one refresh at a time), so that a reload costs
/// what changed since the last, not what is patched. A segment's documents
/// never move and never come back once deleted, so a row's patch and
/// document, once found, are looked for again only when their segment is
/// merged away or they are deleted.
#[derive(Default)]
pub(crate) struct Tracker {
    seen: SegmentMap<SegmentId, Seen>,
    rows: HashMap<Arc<str>, Row>,
    /// Each segment's patched documents: what `publish` makes
    /// `SegmentPatches` of.
    placed: SegmentMap<SegmentId, Placed>,
    published: SegmentMap<SegmentId, Arc<SegmentPatches>>,
    /// Segments whose patched documents changed since the last publish.
    dirty: SegmentSet<SegmentId>,
}

impl Tracker {
    /// The segments seen so far, and those that hold only patches (see
    /// `merges`).
    pub(crate) fn kinds(&self) -> (SegmentSet<SegmentId>, SegmentSet<SegmentId>) {
        let known = self.seen.keys().copied().collect();
        let patches_only = self
            .seen
            .iter()
            .filter(|(_, s)| !s.written.is_empty() && s.written.len() as u32 == s.max_doc)
            .map(|(id, _)| *id)
            .collect();
        (known, patches_only)
    }

    fn place(&mut self, key: &Arc<str>, at: (SegmentId, DocId), patch: &Arc<Patch>) {
        self.placed
            .entry(at.0)
            .or_default()
            .insert(at.1, (key.clone(), patch.clone()));
        self.dirty.insert(at.0);
    }

    fn unplace(&mut self, at: (SegmentId, DocId)) {
        if let Some(placed) = self.placed.get_mut(&at.0) {
            placed.remove(&at.1);
        }
        self.dirty.insert(at.0);
    }

    /// The patches of `searcher`'s segments. Blocking: reads the new
    /// segments' patches and finds the documents of rows patched anew.
    ///
    /// All or nothing: a step records what it saw (a segment's delete
    /// count, say) before the reads that may fail, and a step cut short
    /// would leave a patch it had found gone unhandled, yet no longer
    /// looked for. So on an error the tracker forgets everything: the next
    /// step reads every segment anew, as when a generation is opened.
    pub(crate) fn next(
        &mut self,
        searcher: &Searcher,
        fields: &Fields,
        layout: &AttrLayout,
    ) -> crate::Result<Patches> {
        let stepped = self.step(searcher, fields, layout);
        if stepped.is_err() {
            *self = Tracker::default();
        }
        stepped
    }

    fn step(
        &mut self,
        searcher: &Searcher,
        fields: &Fields,
        layout: &AttrLayout,
    ) -> crate::Result<Patches> {
        let segments = searcher.segment_readers();
        let ids: SegmentSet<SegmentId> = segments.iter().map(|s| s.segment_id()).collect();
        let removed: Vec<SegmentId> = self
            .seen
            .keys()
            .filter(|id| !ids.contains(id))
            .copied()
            .collect();
        // Segments read before whose deletes moved: patches and documents
        // there may be gone.
        let mut deleted_in: SegmentMap<SegmentId, &SegmentReader> = SegmentMap::new();
        for segment in segments {
            if let Some(seen) = self.seen.get_mut(&segment.segment_id()) {
                if seen.deleted != segment.num_deleted_docs() {
                    seen.deleted = segment.num_deleted_docs();
                    deleted_in.insert(segment.segment_id(), segment);
                }
            }
        }

        // 1. Patch documents gone: deleted, or in a segment merged away
        // (a merge carries the live ones into a new segment, read below).
        let mut lost: HashMap<Arc<str>, Option<(SegmentId, DocId)>> = HashMap::new();
        let mut gone = Vec::new();
        for (id, segment) in &deleted_in {
            let alive = segment.alive_bitset();
            for (doc, key, _) in self.seen[id].written.iter() {
                if alive.is_some_and(|a| a.is_deleted(*doc)) {
                    gone.push((key.clone(), (*id, *doc)));
                }
            }
        }
        for id in &removed {
            let seen = self.seen.remove(id).expect("a removed segment was seen");
            gone.extend(
                seen.written
                    .iter()
                    .map(|(doc, key, _)| (key.clone(), (*id, *doc))),
            );
        }
        for (key, at) in gone {
            if self.rows.get(&key).is_some_and(|row| row.patch_at == at) {
                let row = self.rows.remove(&key).expect("present");
                lost.insert(key, row.doc);
            }
        }

        // 2. Documents gone, of rows still patched or lost above.
        let mut unplaced = Vec::new();
        for id in removed.iter().chain(deleted_in.keys()) {
            let alive = deleted_in.get(id).and_then(|s| s.alive_bitset());
            let merged_away = !deleted_in.contains_key(id);
            for (doc, (key, _)) in self.placed.get(id).into_iter().flatten() {
                if merged_away || alive.is_some_and(|a| a.is_deleted(*doc)) {
                    unplaced.push((key.clone(), (*id, *doc)));
                }
            }
        }
        for (key, at) in unplaced {
            self.unplace(at);
            if let Some(row) = self.rows.get_mut(&key) {
                row.doc = None;
            }
            if let Some(doc) = lost.get_mut(&key) {
                *doc = None;
            }
        }
        for id in &removed {
            self.placed.remove(id);
            self.published.remove(id);
            self.dirty.remove(id);
        }

        // 3. The new segments' patches: each live one is its row's patch,
        // replacing any older.
        let new: Vec<&SegmentReader> = segments
            .iter()
            .filter(|s| !self.seen.contains_key(&s.segment_id()))
            .collect();
        let mut fresh: Vec<Arc<str>> = Vec::new();
        for segment in &new {
            let id = segment.segment_id();
            let written = read_written(segment, fields, layout)?;
            let alive = segment.alive_bitset();
            for (doc, key, patch) in written.iter() {
                if alive.is_some_and(|a| a.is_deleted(*doc)) {
                    continue;
                }
                let doc_at = match (self.rows.remove(key), lost.remove(key)) {
                    (Some(row), _) => row.doc,
                    (None, Some(doc_at)) => doc_at,
                    (None, None) => {
                        fresh.push(key.clone());
                        None
                    }
                };
                if let Some(at) = doc_at {
                    self.place(key, at, patch);
                }
                let row = Row {
                    patch_at: (id, *doc),
                    patch: patch.clone(),
                    doc: doc_at,
                };
                self.rows.insert(key.clone(), row);
            }
            self.seen.insert(
                id,
                Seen {
                    written,
                    deleted: segment.num_deleted_docs(),
                    max_doc: segment.max_doc(),
                },
            );
        }
        // Rows whose patch is gone for good: their documents are plain.
        for (_, doc_at) in lost {
            if let Some(at) = doc_at {
                self.unplace(at);
            }
        }

        // 4. Documents of rows that have none placed: in a new segment,
        // or (a row patched anew, or one whose document was merged away or
        // rewritten) in any. A row found nowhere before is looked for in
        // new segments only: a segment read before gains no documents.
        let homeless: HashSet<Arc<str>> = self
            .rows
            .iter()
            .filter(|(_, row)| row.doc.is_none())
            .map(|(key, _)| key.clone())
            .collect();
        let mut found: Vec<(Arc<str>, (SegmentId, DocId))> = Vec::new();
        if !homeless.is_empty() {
            for segment in &new {
                let id = segment.segment_id();
                // A term lookup costs about as much as reading five keys
                // of the segment's column.
                if homeless.len() * 5 < segment.num_docs() as usize {
                    let finder = Finder::new(std::slice::from_ref(*segment), fields)?;
                    finder.each(homeless.iter().cloned(), |_, key, doc| {
                        found.push((key, (id, doc)));
                    })?;
                } else {
                    for_each_live_key(segment, |doc, key| {
                        if let Some(key) = homeless.get(key) {
                            found.push((key.clone(), (id, doc)));
                        }
                    })?;
                }
            }
            let placed_now: HashSet<&Arc<str>> = found.iter().map(|(k, _)| k).collect();
            // Only a row patched anew can have its document in a segment
            // read before: any other row's document was found before, or
            // moved (merged, rewritten) into a new segment.
            let anew: Vec<Arc<str>> = fresh
                .iter()
                .filter(|key| homeless.contains(*key) && !placed_now.contains(key))
                .cloned()
                .collect();
            let old: Vec<SegmentReader> = segments
                .iter()
                .filter(|s| new.iter().all(|n| n.segment_id() != s.segment_id()))
                .cloned()
                .collect();
            Finder::new(&old, fields)?.each(anew.into_iter(), |id, key, doc| {
                found.push((key, (id, doc)));
            })?;
        }
        for (key, at) in found {
            if let Some(row) = self.rows.get_mut(&key) {
                row.doc = Some(at);
                let patch = row.patch.clone();
                self.place(&key, at, &patch);
            }
        }

        // 5. Publish: segments whose patched documents changed get a new
        // stamp; the others keep theirs, and the counts cached under it.
        for id in std::mem::take(&mut self.dirty) {
            let Some(segment) = segments.iter().find(|s| s.segment_id() == id) else {
                continue;
            };
            match self.placed.get(&id).filter(|p| !p.is_empty()) {
                Some(placed) => {
                    let patches = SegmentPatches::new(segment.max_doc(), placed);
                    self.published.insert(id, Arc::new(patches));
                }
                None => {
                    self.placed.remove(&id);
                    self.published.remove(&id);
                }
            }
        }
        Ok(Patches {
            segments: self.published.clone(),
            rows: self.placed.values().map(BTreeMap::len).sum(),
            documents: self.rows.len() as u64,
        })
    }
}

/// Finds rows' live documents by key in some segments, each key's in the
/// first segment that has it alive (a row has one live document).
struct Finder<'a> {
    segments: Vec<(&'a SegmentReader, Arc<tantivy::InvertedIndexReader>)>,
    key: tantivy::schema::Field,
}

impl<'a> Finder<'a> {
    fn new(segments: &'a [SegmentReader], fields: &Fields) -> tantivy::Result<Finder<'a>> {
        let segments = segments
            .iter()
            .map(|s| Ok((s, s.inverted_index(fields.key)?)))
            .collect::<tantivy::Result<_>>()?;
        Ok(Finder {
            segments,
            key: fields.key,
        })
    }

    /// Calls `found` with the segment and the live document of each of
    /// `keys` that has one here.
    fn each(
        &self,
        keys: impl Iterator<Item = Arc<str>>,
        mut found: impl FnMut(SegmentId, Arc<str>, DocId),
    ) -> tantivy::Result<()> {
        for key in keys {
            let term = Term::from_field_text(self.key, &key);
            'segments: for (segment, inverted) in &self.segments {
                let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let alive = segment.alive_bitset();
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        found(segment.segment_id(), key, doc);
                        break 'segments;
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(())
    }
}

/// The patches `segment` holds, alive or not. They sort last (see
/// `order`), so they are the segment's tail from the first document at
/// `PATCH_TIME`.
fn read_written(
    segment: &SegmentReader,
    fields: &Fields,
    layout: &AttrLayout,
) -> tantivy::Result<Written> {
    #[cfg(test)]
    if tests::FAIL_READS.with(|fail| fail.replace(false)) {
        return Err(std::io::Error::other("injected read failure").into());
    }
    let Some(keys) = segment.fast_fields().str("patch")? else {
        return Ok(Arc::from([]));
    };
    let created = segment.fast_fields().i64("created_at")?;
    let digests = segment.fast_fields().u64("digest")?;
    let is_patch_time = |doc: DocId| created.first(doc) == Some(PATCH_TIME);
    let lo = crate::order::partition_point(0..segment.max_doc(), is_patch_time);
    // Each patch's key from the column's dictionary, streamed once: a
    // lookup by ordinal decompresses a dictionary block per patch.
    let mut terms: Vec<Arc<str>> = Vec::with_capacity(keys.num_terms());
    let mut stream = keys.dictionary().stream()?;
    while stream.advance() {
        terms.push(Arc::from(String::from_utf8_lossy(stream.key()).as_ref()));
    }
    let store = segment.get_store_reader(1)?;
    let mut out = Vec::new();
    for doc in lo..segment.max_doc() {
        let Some(key) = keys
            .term_ords(doc)
            .next()
            .and_then(|ord| terms.get(ord as usize))
        else {
            continue;
        };
        let Some((source, _)) = parse_key_term(key) else {
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
        out.push((doc, key.clone(), Arc::new(patch)));
    }
    Ok(Arc::from(out))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    thread_local! {
        /// Set, the next read of a segment's patches on this thread fails.
        pub(crate) static FAIL_READS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// A reload whose patch tracking fails after it saw a segment's
    /// deletes move (its patch was dropped) must not lose that: the next
    /// reload still drops the patch. Without the step being all or
    /// nothing, the segment's new delete count was recorded, the dropped
    /// patch never looked for again, and the row kept its old likes.
    #[test]
    fn a_tracking_step_that_fails_forgets_nothing() {
        use chaja_core::model::{AttrValue, Doc, Key};
        use chaja_core::sources::SourceId;

        let config = chaja_core::sources::ConfigFile::parse(
            "[[source]]\nname = \"question\"\ntable = \"questions\"\nid = \"id\"\ncreated_at = \"created_at\"\nfields = [\"title\", \"content\"]\nattributes = [\"likes\"]\nnumeric = [\"likes\"]",
        )
        .unwrap();
        let sources = config.sources.as_ref().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let generation = crate::create_generation(dir.path(), sources).unwrap();
        let mut writer = generation.writer_with_threads(32 << 20, 1).unwrap();
        let row = |id: i64, likes: i64| Doc {
            source: SourceId::from_index(0),
            key: Key::Int(id),
            title: Some(format!("제목 {id}")),
            body: vec!["본문".to_owned()],
            created_at: 1_000 + id,
            attributes: vec![("likes".to_owned(), AttrValue::Int(likes))],
        };
        writer.upsert(&row(1, 1)).unwrap();
        writer.commit(1).unwrap();
        writer.patch(&row(1, 5)).unwrap();
        writer.commit(2).unwrap();
        generation.reload().unwrap();
        assert_eq!(generation.view().patches.len(), 1);

        // The patch is dropped (likes back to the document's) in the same
        // commit as a new row, whose segment's patches are read.
        writer.unpatch(SourceId::from_index(0), "1");
        writer.upsert(&row(2, 1)).unwrap();
        writer.commit(3).unwrap();
        FAIL_READS.with(|fail| fail.set(true));
        assert!(generation.reload().is_err(), "the injected failure");
        generation.reload().unwrap();
        let view = generation.view();
        assert_eq!(view.patches.len(), 0, "the dropped patch is gone");
        let indexed = generation
            .indexed(&[(SourceId::from_index(0), "1")])
            .unwrap();
        assert_eq!(
            indexed[&crate::key_term(SourceId::from_index(0), "1")].patched,
            None
        );
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
        let placed = BTreeMap::from([
            (64, (Arc::from("0:1"), Arc::new(patch))),
            (
                3,
                (
                    Arc::from("0:2"),
                    Arc::new(Patch::new("{}".into(), 1, &[], &[])),
                ),
            ),
        ]);
        let bits = SegmentPatches::new(100, &placed);
        assert!(bits.get(64).is_some_and(|p| p.digest == 7));
        assert!(bits.get(3).is_some_and(|p| p.digest == 1));
        assert!(bits.get(4).is_none() && bits.get(99).is_none() && bits.get(1000).is_none());
    }
}
