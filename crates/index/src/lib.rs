//! The tantivy side: schema, tokenizers, generations on disk, writes, search.
//!
//! The index lives in generations, `ROOT/gen-<n>/`, and the file
//! `ROOT/CURRENT` names the live one. `reindex` builds the next generation
//! beside the live one and names it in `ROOT/NEXT`; the serving indexer
//! catches it up on the outbox and only then replaces `CURRENT` with it by a
//! rename, so a restart never serves a generation that has not caught up,
//! and a crash
//! at any point leaves either the old or the new generation live, never a
//! half-built one.

mod error;
pub mod morph;
pub mod schema;
pub mod search;
pub mod tokenizer;
mod version;
pub mod warm;

pub use error::IndexError;
pub use version::Version;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use tantivy::directory::MmapDirectory;
use tantivy::schema::Term;
use tantivy::tokenizer::WhitespaceTokenizer;
use tantivy::{
    Index, IndexReader, IndexSettings, IndexSortByField, IndexWriter, Order, ReloadPolicy,
    TantivyDocument,
};

use chaja_core::model::Doc;
use chaja_core::sources::{SourceId, Sources, MAX_SOURCES};
use schema::{build_schema, Fields, BIGRAM, FOURGRAM, MORPH, TRIGRAM, UNIGRAM};
use tokenizer::GramTokenizer;

pub type Result<T, E = IndexError> = std::result::Result<T, E>;

const CURRENT: &str = "CURRENT";
/// Names a rebuilt generation waiting to be caught up and made current.
const NEXT: &str = "NEXT";
/// Names what a generation was built with: the text normalization its grams
/// hold and the analyzer of its morphological fields.
const ANALYZER_FILE: &str = "analyzer";
/// Names the sources a generation was built for, one per line, in order
/// (a document stores its source's position), then [`LAYOUT`].
const SOURCES_FILE: &str = "sources";
/// The last line of [`SOURCES_FILE`]: the fields this version indexes.
/// Besides the schema check, it keeps a server of an older version (which
/// compares the file with its list of sources alone) from adopting a
/// rebuild in this layout, whose keywords it would look up in fields that
/// no longer hold them.
const LAYOUT: &str = "layout: grams4";

/// What [`SOURCES_FILE`] holds for a generation of `sources`.
fn generation_stamp(sources: &Sources) -> String {
    format!("{}\n{LAYOUT}", sources.stamp())
}
/// `Sources::definition` of what a generation was built from.
const DEFINITION_FILE: &str = "sources.definition";

/// The contents of [`ANALYZER_FILE`] for what this process builds.
fn analyzer_stamp() -> String {
    format!(
        "{} {}",
        morph::analyzer().name(),
        chaja_core::text::NORMALIZATION
    )
}

/// One opened generation: the index, a reader, and the field handles.
pub struct Generation {
    pub id: u64,
    pub path: PathBuf,
    pub index: Index,
    pub reader: IndexReader,
    pub fields: Fields,
    /// Exact totals of queries per segment (see `search`).
    pub totals: SegmentTotals,
    /// Matches searches have visited in this generation: the work counter
    /// that shows a stopped search stopped.
    pub scanned: std::sync::atomic::AtomicU64,
    /// Each segment's source of every document, one byte per document
    /// (see `search::doc_sources`).
    pub doc_sources: DocSources,
}

/// segment → the source position of each of its documents. A segment's
/// documents never change, so this is read from `uid` once per segment;
/// entries of segments merged away expire unused.
pub type DocSources = moka::sync::Cache<tantivy::index::SegmentId, Arc<[u8]>>;

/// (segment, its deleted-document count, query) → matching documents by
/// source (`search::SourceCounts`).
pub type SegmentTotals =
    moka::sync::Cache<(tantivy::index::SegmentId, u32, Arc<str>), search::SourceCounts>;

/// Joins a row's body fields in the stored `content` field, and the title
/// and the body fields in the gram fields (see `DocWriter::add`).
pub const BODY_SEPARATOR: &str = "\u{0}";

/// Bits of a `uid` that hold the source; the next one says the key is a
/// string.
const SOURCE_BITS: u32 = 4;
const STRING_KEY: u64 = 1 << SOURCE_BITS;

/// The sort tiebreak and source of a row (see `Fields::uid`).
pub fn uid(source: SourceId, key: &chaja_core::model::Key) -> u64 {
    let source = source.index() as u64;
    match key {
        chaja_core::model::Key::Int(i) => ((*i as u64) << (SOURCE_BITS + 1)) | source,
        chaja_core::model::Key::Str(s) => {
            let hash = blake3::hash(s.as_bytes());
            let high = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"));
            (high << (SOURCE_BITS + 1)) | STRING_KEY | source
        }
    }
}

/// The source a `uid` belongs to.
pub fn uid_source(uid: u64) -> usize {
    (uid & (MAX_SOURCES as u64 - 1)) as usize
}

/// Whether the `uid` is of a string key.
pub fn uid_has_string_key(uid: u64) -> bool {
    uid & STRING_KEY != 0
}

/// The `key` term of a row: `<source position>:<key text>`.
pub fn key_term(source: SourceId, key_text: &str) -> String {
    format!("{}:{key_text}", source.index())
}

/// The source and key text of a `key` term.
pub fn parse_key_term(term: &str) -> Option<(SourceId, &str)> {
    let (source, key) = term.split_once(':')?;
    let source: usize = source.parse().ok()?;
    (source < MAX_SOURCES).then(|| (SourceId::from_index(source), key))
}

impl Generation {
    fn open(root: &Path, id: u64, sources: &Sources) -> Result<Generation> {
        let path = generation_path(root, id);
        let index = Index::open(MmapDirectory::open(&path)?)?;
        if index.schema() != build_schema() {
            return Err(IndexError::invalid(format!(
                "the index at {} was built by another version of chaja, with other fields: run `chaja reindex` to rebuild it in this version's layout",
                path.display()
            )));
        }
        let built_for = std::fs::read_to_string(path.join(SOURCES_FILE)).unwrap_or_default();
        if built_for.trim() != generation_stamp(sources) {
            let names: Vec<&str> = built_for
                .lines()
                .filter(|line| !line.starts_with("layout:"))
                .collect();
            if names.join("\n") == sources.stamp() {
                return Err(IndexError::invalid(format!(
                    "the index at {} was built by another version of chaja, in another layout: run `chaja reindex` to rebuild it in this version's layout",
                    path.display()
                )));
            }
            return Err(IndexError::invalid(format!(
                "the index at {} was built for the sources [{}], but the config names [{}]: a source was renamed, added, removed or moved. Run `chaja reindex` with this config to rebuild the index for it",
                path.display(),
                names.join(", "),
                sources.stamp().replace('\n', ", ")
            )));
        }
        let definition = std::fs::read_to_string(path.join(DEFINITION_FILE)).unwrap_or_default();
        if definition.trim() != sources.definition() {
            tracing::warn!(
                generation = id,
                "the index was built from other source settings (a table, a column, a filter or a time zone changed); run `chaja reindex` so that it follows them: until then rows the new settings hide may still be found"
            );
        }
        let built = std::fs::read_to_string(path.join(ANALYZER_FILE)).unwrap_or_default();
        let now = analyzer_stamp();
        if built.trim() != now {
            tracing::warn!(
                generation = id,
                built_with = built.trim(),
                serving_with = now,
                "index generation was built with another analyzer or text normalization; run `chaja reindex` so that matches and relevance follow the current rules"
            );
        }
        Generation::from_index(id, path, index)
    }

    fn from_index(id: u64, path: PathBuf, index: Index) -> Result<Generation> {
        index
            .tokenizers()
            .register(FOURGRAM, GramTokenizer::fourgram());
        index
            .tokenizers()
            .register(TRIGRAM, GramTokenizer::trigram());
        index.tokenizers().register(BIGRAM, GramTokenizer::bigram());
        index
            .tokenizers()
            .register(UNIGRAM, GramTokenizer::unigram());
        // The morphological fields hold morphemes found before the writer,
        // joined by spaces (see `Morphemes`).
        index
            .tokenizers()
            .register(MORPH, WhitespaceTokenizer::default());
        let fields = Fields::from_schema(&index.schema())?;
        // Reloaded by the writer right after each commit, so a write is
        // visible as soon as it is committed.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Generation {
            id,
            path,
            index,
            reader,
            fields,
            totals: moka::sync::Cache::new(100_000),
            scanned: Default::default(),
            doc_sources: moka::sync::Cache::builder()
                .weigher(|_, sources: &Arc<[u8]>| u32::try_from(sources.len()).unwrap_or(u32::MAX))
                .max_capacity(1 << 30)
                .time_to_idle(std::time::Duration::from_secs(600))
                .build(),
        })
    }

    /// The outbox position that the last commit of this generation applied.
    pub fn applied_seq(&self) -> Result<i64> {
        Ok(self.checkpoint()?.outbox_seq)
    }

    /// What the last commit of this generation applied of the outbox.
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        read_checkpoint(&self.index)
    }

    /// Keys (`<source>:<key>`) that more than one live document carries.
    /// Blocking. A pass over the `uid` column finds candidates (a string
    /// key's uid is a hash, so two keys may share one); only the segments
    /// that hold a candidate have their keys read.
    pub fn duplicate_keys(&self) -> Result<Vec<String>> {
        let searcher = self.reader.searcher();
        let mut seen = std::collections::HashSet::with_capacity(searcher.num_docs() as usize);
        let mut candidates = std::collections::HashSet::new();
        for segment in searcher.segment_readers() {
            let uid = segment.fast_fields().u64("uid")?;
            for doc in segment.doc_ids_alive() {
                if let Some(u) = uid.first(doc) {
                    if !seen.insert(u) {
                        candidates.insert(u);
                    }
                }
            }
        }
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut counts: std::collections::HashMap<String, u32> = Default::default();
        for segment in searcher.segment_readers() {
            let uid = segment.fast_fields().u64("uid")?;
            for_each_live_key(segment, |doc, key| {
                if uid.first(doc).is_some_and(|u| candidates.contains(&u)) {
                    *counts.entry(key.to_owned()).or_default() += 1;
                }
            })?;
        }
        let mut duplicates: Vec<String> = counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(key, _)| key)
            .collect();
        duplicates.sort_unstable();
        Ok(duplicates)
    }

    /// Number of live documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Live documents by source, read from the `uid` column. Blocking: a
    /// pass over every document.
    pub fn docs_by_source(&self) -> Result<search::SourceCounts> {
        let searcher = self.reader.searcher();
        let mut counts = [0u64; MAX_SOURCES];
        for segment in searcher.segment_readers() {
            let uid = segment.fast_fields().u64("uid")?;
            for doc in segment.doc_ids_alive() {
                if let Some(u) = uid.first(doc) {
                    counts[uid_source(u)] += 1;
                }
            }
        }
        Ok(counts)
    }

    /// Bytes on disk, as far as they can be read: tantivy deletes merged
    /// segment files, and a swap removes old generations, while this runs;
    /// a file gone meanwhile counts nothing. Blocking.
    pub fn size_bytes(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return 0;
        };
        entries
            .filter_map(|entry| entry.ok()?.metadata().ok())
            .filter(|meta| meta.is_file())
            .map(|meta| meta.len())
            .sum()
    }

    /// The analyzer and the normalization rule this generation was built
    /// with, as recorded when it was created. Blocking.
    pub fn built_with(&self) -> (String, String) {
        let stamp = std::fs::read_to_string(self.path.join(ANALYZER_FILE)).unwrap_or_default();
        let (analyzer, normalization) = stamp.trim().split_once(' ').unwrap_or((stamp.trim(), ""));
        (analyzer.to_owned(), normalization.to_owned())
    }

    /// A writer with a thread per core, as many as `memory_budget` allows.
    pub fn writer(&self, memory_budget: usize) -> Result<DocWriter> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.writer_with_threads(memory_budget, cores)
    }

    /// A writer with up to `threads` indexing threads sharing
    /// `memory_budget`: as many as the budget allows, as `Index::writer`
    /// does. tantivy refuses less than 15 MB per thread (its
    /// `MEMORY_BUDGET_NUM_BYTES_MIN`, not exported) and more than 8 threads.
    pub fn writer_with_threads(&self, memory_budget: usize, threads: usize) -> Result<DocWriter> {
        let threads = threads.min(8).min(memory_budget / 15_000_000).max(1);
        let writer: IndexWriter<TantivyDocument> =
            self.index.writer_with_num_threads(threads, memory_budget)?;
        Ok(DocWriter {
            writer,
            fields: self.fields,
        })
    }
}

/// What an index commit has applied of the outbox, stored as the commit
/// payload (tantivy keeps it in `meta.json` and never reads it), so it is
/// written atomically with the documents it describes.
///
/// Every outbox id at or below `outbox_seq` is applied, except the ids in
/// `gaps`; every id in `(outbox_seq, high]` is applied except those in
/// `gaps` too. A gap is an id some transaction allocated and had not
/// committed when a higher id was read: it is kept, and re-read, until it
/// appears or is known never to (see `mirror::indexer`). Older payloads hold
/// only `outbox_seq`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub outbox_seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<i64>,
    /// `created_at` of the outbox row at `high`: a restored database that
    /// reuses the id has another one there (see `mirror::indexer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<GapRange>,
}

/// Outbox ids `first..=last` not seen yet. `late`: past the grace period,
/// so the recorded position has moved past them, but they are still re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapRange {
    pub first: i64,
    pub last: i64,
    #[serde(default)]
    pub late: bool,
}

impl Checkpoint {
    /// A position with nothing pending: every id up to `seq` applied.
    pub fn at(seq: i64) -> Checkpoint {
        Checkpoint {
            outbox_seq: seq,
            ..Checkpoint::default()
        }
    }

    /// Every outbox row this checkpoint could still need to read is above
    /// this: below the position and below every gap, late ones included.
    /// Pruning must never pass it.
    pub fn low_water(&self) -> i64 {
        let below_gaps = self.gaps.iter().map(|g| g.first - 1).min();
        below_gaps.map_or(self.outbox_seq, |g| g.min(self.outbox_seq))
    }
}

fn read_checkpoint(index: &Index) -> Result<Checkpoint> {
    let metas = index.load_metas()?;
    match metas.payload.as_deref() {
        None => Ok(Checkpoint::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| IndexError::invalid(format!("bad commit payload {text:?}: {e}"))),
    }
}

/// A row's morphemes, found before the row reaches the writer.
///
/// tantivy tokenizes on its own indexing threads; handing it the morphemes
/// ready-made lets a rebuild run lindera on threads of its own. On two
/// cores, one thread of each kind keeps both caches warm: 100k rows took
/// 65 s instead of 77 s with both kinds of work on both threads. They go
/// joined by spaces (morphemes have none) to a whitespace tokenizer:
/// tantivy's pre-tokenized values make a JSON round trip per document.
#[derive(Debug, Default)]
pub struct Morphemes {
    title: String,
    content: String,
}

impl Morphemes {
    pub fn of(doc: &Doc) -> Morphemes {
        let analyzer = morph::analyzer();
        let mut content = Vec::new();
        for text in &doc.body {
            content.extend(analyzer.morphemes(text));
        }
        Morphemes {
            title: doc
                .title
                .as_deref()
                .map(|t| analyzer.morphemes(t).join(" "))
                .unwrap_or_default(),
            content: content.join(" "),
        }
    }
}

/// The one writer of a generation: upserts, deletes, commits with the outbox
/// position.
pub struct DocWriter {
    writer: IndexWriter<TantivyDocument>,
    fields: Fields,
}

impl DocWriter {
    /// Replaces whatever the index holds for this row.
    pub fn upsert(&mut self, doc: &Doc) -> Result<()> {
        self.delete(doc.source, &doc.key.text());
        self.add(doc, Morphemes::of(doc))
    }

    /// Adds a row the index does not hold yet, with its morphemes: a
    /// rebuild reads each row once into an empty generation. Skipping the
    /// delete matters there, since every delete is looked up in every
    /// segment at commit.
    pub fn add(&mut self, doc: &Doc, morphemes: Morphemes) -> Result<()> {
        let f = &self.fields;
        let mut d = TantivyDocument::new();
        d.add_u64(f.uid, uid(doc.source, &doc.key));
        d.add_text(f.key, key_term(doc.source, &doc.key.text()));
        d.add_i64(f.created_at, doc.created_at);
        d.add_u64(f.digest, doc.digest());
        if !doc.attributes.is_empty() {
            let mut stored = serde_json::Map::new();
            for (name, value) in &doc.attributes {
                if let Some(text) = value.filter_text() {
                    d.add_text(f.attrs, format!("{name}={text}"));
                }
                stored.insert(name.clone(), value.to_json());
            }
            d.add_text(f.attributes, serde_json::Value::Object(stored).to_string());
        }
        // The body fields as one value, joined by NUL: a keyword never
        // holds a NUL (control characters are refused in queries), so no
        // gram that spans two columns can match, and a phrase does not run
        // from one column into the next, as `LIKE` on each would not.
        // (tantivy's gap between the values of a field is one position,
        // too little for phrases of 4-grams.) Snippets split it again. The
        // gram fields take the title the same way, in front.
        let body = doc.body.join(BODY_SEPARATOR);
        d.add_text(f.content, &body);
        let grams_of = match &doc.title {
            Some(title) => {
                d.add_text(f.title, title);
                d.add_text(f.title_morph, morphemes.title);
                format!("{title}{BODY_SEPARATOR}{body}")
            }
            None => body,
        };
        for field in [f.grams4, f.grams3, f.grams2, f.chars] {
            d.add_text(field, &grams_of);
        }
        d.add_text(f.content_morph, morphemes.content);
        self.writer.add_document(d)?;
        Ok(())
    }

    /// Removes the row of `source` whose key reads `key_text`.
    pub fn delete(&mut self, source: SourceId, key_text: &str) {
        self.writer.delete_term(Term::from_field_text(
            self.fields.key,
            &key_term(source, key_text),
        ));
    }

    /// Commits everything so far as having applied the outbox up to `seq`,
    /// with nothing pending.
    pub fn commit(&mut self, outbox_seq: i64) -> Result<()> {
        self.commit_checkpoint(&Checkpoint::at(outbox_seq))
    }

    /// Commits everything so far with what it applied of the outbox.
    pub fn commit_checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let payload = serde_json::to_string(checkpoint).expect("checkpoint serializes to json");
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        Ok(())
    }

    /// Finishes background merges and releases the writer lock, so that a
    /// serving process can open its own writer on this generation.
    pub fn wait_merging_threads(self) -> Result<()> {
        Ok(self.writer.wait_merging_threads()?)
    }
}

/// Calls `f` with every live document of `segment` and its `key`. The
/// column's dictionary is streamed once, in order: looking each document's
/// key up by itself decompresses a dictionary block per document, which
/// made a scan of 100k rows take seconds of CPU.
pub fn for_each_live_key(
    segment: &tantivy::SegmentReader,
    mut f: impl FnMut(tantivy::DocId, &str),
) -> Result<()> {
    let Some(keys) = segment.fast_fields().str("key")? else {
        return Ok(());
    };
    let mut terms: Vec<String> = Vec::with_capacity(keys.num_terms());
    let mut stream = keys.dictionary().stream()?;
    while stream.advance() {
        terms.push(String::from_utf8_lossy(stream.key()).into_owned());
    }
    for doc in segment.doc_ids_alive() {
        if let Some(term) = keys
            .term_ords(doc)
            .next()
            .and_then(|ord| terms.get(ord as usize))
        {
            f(doc, term);
        }
    }
    Ok(())
}

/// The cloneable handle to the live generation that searches use.
#[derive(Clone)]
pub struct SearchIndex {
    root: Arc<PathBuf>,
    live: Arc<RwLock<Arc<Generation>>>,
    sources: Sources,
}

impl SearchIndex {
    /// Opens the live generation under `root`, creating an empty first one.
    pub fn open_or_create(root: &Path, sources: &Sources) -> Result<SearchIndex> {
        SearchIndex::open(root, sources, false)
    }

    /// [`SearchIndex::open_or_create`] for the server: when the live
    /// generation was built for other sources or by a version of chaja with
    /// other fields, and a rebuild for these waits in `NEXT` (`chaja
    /// reindex` after a config change or an upgrade), the rebuild is
    /// made live, since the old one cannot be read under this config at
    /// all; the indexer catches it up on the outbox from its checkpoint.
    /// Nothing else adopts it: `verify` must not move what a running
    /// server serves.
    pub fn open_for_serving(root: &Path, sources: &Sources) -> Result<SearchIndex> {
        SearchIndex::open(root, sources, true)
    }

    fn open(root: &Path, sources: &Sources, adopt: bool) -> Result<SearchIndex> {
        std::fs::create_dir_all(root)?;
        let current = match current_generation(root)? {
            // Built for other sources or in another layout, with a rebuild
            // for these waiting (see `open_for_serving`).
            Some(id) if adopt && !built_for(root, id, sources) => match named(root, NEXT)? {
                Some(next) if built_for(root, next, sources) => {
                    tracing::warn!(
                        generation = next,
                        "the live index was built for other sources or by another version of chaja; serving the rebuild, which catches up on the outbox"
                    );
                    make_current(root, next)?;
                    Some(next)
                }
                _ => Some(id),
            },
            Some(id) => Some(id),
            // Only a rebuild so far: with nothing served yet, it is as
            // good as any.
            None => match named(root, NEXT)? {
                Some(id) => {
                    make_current(root, id)?;
                    Some(id)
                }
                None => None,
            },
        };
        let generation = match current {
            Some(id) => Generation::open(root, id, sources)?,
            None => {
                let generation = create_generation(root, sources)?;
                generation.writer(1 << 26)?.commit(0)?;
                make_current(root, generation.id)?;
                generation
            }
        };
        Ok(SearchIndex {
            root: Arc::new(root.to_path_buf()),
            live: Arc::new(RwLock::new(Arc::new(generation))),
            sources: sources.clone(),
        })
    }

    /// The sources this index holds rows of.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The live generation. Cheap; hold it for the length of one request.
    pub fn live(&self) -> Arc<Generation> {
        self.live.read().expect("index lock poisoned").clone()
    }

    /// Makes `generation` the live one for all later requests. Requests that
    /// already hold the old one finish on it.
    pub fn swap(&self, generation: Arc<Generation>) {
        *self.live.write().expect("index lock poisoned") = generation;
    }

    /// The rebuilt generation `NEXT` names, when it is not the live one.
    pub fn published(&self) -> Result<Option<u64>> {
        match named(&self.root, NEXT)? {
            Some(id) if id != self.live().id => Ok(Some(id)),
            _ => Ok(None),
        }
    }

    /// Opens generation `id` under this root. Blocking.
    pub fn open_generation(&self, id: u64) -> Result<Generation> {
        Generation::open(&self.root, id, &self.sources)
    }

    /// Removes generations older than the live one.
    pub fn remove_old_generations(&self) -> Result<()> {
        let live = self.live().id;
        for id in list_generations(&self.root)? {
            if id < live {
                std::fs::remove_dir_all(generation_path(&self.root, id))?;
                tracing::info!(generation = id, "removed old index generation");
            }
        }
        Ok(())
    }
}

/// Held while a rebuild writes a new generation: one rebuild at a time per
/// index directory, whoever starts it (the CLI, the admin endpoint, the
/// indexer itself). Two at once could pick the same generation id, or one
/// could remove the other's unpublished directory. An OS file lock, so a
/// rebuild killed with SIGKILL releases it.
#[derive(Debug)]
pub struct RebuildLock {
    _file: std::fs::File,
}

const REBUILD_LOCK: &str = "REBUILD.lock";

/// Takes the rebuild lock of `root`, or `None` while another rebuild holds
/// it. Blocking.
pub fn try_lock_rebuild(root: &Path) -> Result<Option<RebuildLock>> {
    std::fs::create_dir_all(root)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(REBUILD_LOCK))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(RebuildLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

/// Removes generations newer than the current one that `NEXT` does not
/// name: rebuilds that died before publishing. Only under the rebuild lock,
/// which proves that no rebuild is writing one.
pub fn remove_unpublished(root: &Path, _held: &RebuildLock) -> Result<()> {
    let current = current_generation(root)?.unwrap_or(0);
    let next = named(root, NEXT)?;
    for id in list_generations(root)? {
        if id > current && Some(id) != next {
            std::fs::remove_dir_all(generation_path(root, id))?;
            tracing::info!(generation = id, "removed an unpublished index generation");
        }
    }
    Ok(())
}

/// What the published generation under `root` has applied of the outbox;
/// `None` when nothing is published. Blocking.
pub fn published_checkpoint(root: &Path) -> Result<Option<Checkpoint>> {
    let Some(id) = current_generation(root)? else {
        return Ok(None);
    };
    let index = Index::open(MmapDirectory::open(generation_path(root, id))?)?;
    Ok(Some(read_checkpoint(&index)?))
}

/// The name a rebuild of the generation at `path` holds back outbox pruning
/// under (see `db::outbox::hold_for_rebuild`): unique per index directory
/// and host (containers may all use the same path).
pub fn rebuild_marker(path: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let host = std::env::var("HOSTNAME").unwrap_or_default();
    let hash = blake3::hash(format!("{host}:{}", path.display()).as_bytes());
    format!("rebuild-{}", &hash.to_hex()[..16])
}

/// Whether generation `id` under `root` was built for `sources`, in this
/// version's schema: one that was not cannot be served.
fn built_for(root: &Path, id: u64, sources: &Sources) -> bool {
    let path = generation_path(root, id);
    std::fs::read_to_string(path.join(SOURCES_FILE))
        .is_ok_and(|stamp| stamp.trim() == generation_stamp(sources))
        && Index::open_in_dir(&path).is_ok_and(|index| index.schema() == build_schema())
}

fn generation_path(root: &Path, id: u64) -> PathBuf {
    root.join(format!("gen-{id:06}"))
}

fn list_generations(root: &Path) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let name = entry?.file_name();
        if let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("gen-"))
            .and_then(|n| n.parse().ok())
        {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

fn current_generation(root: &Path) -> Result<Option<u64>> {
    named(root, CURRENT)
}

/// The generation the file `name` under `root` names, if it exists.
fn named(root: &Path, name: &str) -> Result<Option<u64>> {
    match std::fs::read_to_string(root.join(name)) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| IndexError::invalid(format!("bad {name} file: {text:?}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Creates an empty generation after the newest one on disk.
pub fn create_generation(root: &Path, sources: &Sources) -> Result<Generation> {
    std::fs::create_dir_all(root)?;
    let id = list_generations(root)?.last().copied().unwrap_or(0) + 1;
    let path = generation_path(root, id);
    std::fs::create_dir(&path)?;
    let settings = IndexSettings {
        // Newest first inside every segment, so the newest-first top-k can
        // stop early (see `search`).
        sort_by_field: Some(IndexSortByField {
            field: "created_at".to_owned(),
            order: Order::Desc,
        }),
        ..IndexSettings::default()
    };
    let index = Index::builder()
        .schema(build_schema())
        .settings(settings)
        .create_in_dir(&path)?;
    std::fs::write(path.join(ANALYZER_FILE), analyzer_stamp())?;
    std::fs::write(path.join(SOURCES_FILE), generation_stamp(sources))?;
    std::fs::write(path.join(DEFINITION_FILE), sources.definition())?;
    Generation::from_index(id, path, index)
}

/// Offers rebuilt generation `id` to the serving indexer (`NEXT`),
/// atomically. Blocking.
pub fn publish(root: &Path, id: u64) -> Result<()> {
    name(root, NEXT, id)
}

/// Makes generation `id` the one `CURRENT` names, atomically, and drops a
/// `NEXT` that names it. Blocking.
pub fn make_current(root: &Path, id: u64) -> Result<()> {
    name(root, CURRENT, id)?;
    if named(root, NEXT)? == Some(id) {
        std::fs::remove_file(root.join(NEXT))?;
    }
    Ok(())
}

fn name(root: &Path, file: &str, id: u64) -> Result<()> {
    let tmp = root.join(format!("{file}.tmp"));
    std::fs::write(&tmp, format!("{id}\n"))?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, root.join(file))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: i64, version: i64) -> Doc {
        Doc {
            source: SourceId::from_index(0),
            key: chaja_core::model::Key::Int(id),
            title: Some(format!("제목 {id}")),
            body: vec![format!("본문 {version}")],
            created_at: 1_000 + id,
            attributes: vec![("author_id".to_owned(), chaja_core::model::AttrValue::Int(1))],
        }
    }

    /// Upserts replace: after many rounds of overlapping upserts with
    /// commits in between, every row is in the index exactly once.
    #[test]
    fn upserts_never_leave_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer(32 << 20).unwrap();
        let mut version = 0;
        for round in 0..150i64 {
            for i in 0..40i64 {
                let id = (i * 7 + round * 13) % 500;
                version += 1;
                writer.upsert(&doc(id, version)).unwrap();
            }
            writer.commit(round).unwrap();
        }
        // Merges run in the background: let them finish, then look.
        writer.wait_merging_threads().unwrap();
        generation.reader.reload().unwrap();
        let duplicates = generation.duplicate_keys().unwrap();
        assert!(duplicates.is_empty(), "duplicated keys: {duplicates:?}");
        assert_eq!(generation.num_docs(), 500);
    }

    /// An index built for other sources is refused with a message that
    /// says what to run: documents store their source's position, so
    /// reading them under another list would mislabel every hit.
    #[test]
    fn an_index_of_other_sources_says_to_reindex() {
        let dir = tempfile::tempdir().unwrap();
        SearchIndex::open_or_create(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let renamed = chaja_core::sources::ConfigFile::parse(
            "[[source]]\nname = \"post\"\ntable = \"questions\"\nid = \"id\"\ncreated_at = \"created_at\"\nfields = [\"title\", \"content\"]",
        )
        .unwrap();
        let err = refusal(
            dir.path(),
            renamed.sources.as_ref().unwrap(),
            "another list of sources is refused",
        );
        assert!(
            err.contains("chaja reindex") && err.contains("post"),
            "{err}"
        );
        SearchIndex::open_or_create(dir.path(), &chaja_core::sources::for_tests()).unwrap();

        // `chaja reindex` under the new config: its rebuild is served.
        let renamed = renamed.sources.as_ref().unwrap();
        let rebuilt = create_generation(dir.path(), renamed).unwrap();
        rebuilt.writer(16 << 20).unwrap().commit(0).unwrap();
        publish(dir.path(), rebuilt.id).unwrap();
        drop(rebuilt);
        assert!(SearchIndex::open_or_create(dir.path(), renamed).is_err());
        let index = SearchIndex::open_for_serving(dir.path(), renamed).unwrap();
        assert_eq!(index.live().id, 2);
    }

    /// A generation written by a version with other fields (here: one
    /// without `grams3`) is refused with the way out, and the server serves
    /// its rebuild in this version's layout.
    #[test]
    fn an_index_of_another_layout_says_to_reindex() {
        let dir = tempfile::tempdir().unwrap();
        let sources = chaja_core::sources::for_tests();
        let old = generation_path(dir.path(), 1);
        std::fs::create_dir_all(&old).unwrap();
        let mut schema = tantivy::schema::Schema::builder();
        for entry in build_schema().fields().map(|(_, entry)| entry.clone()) {
            if entry.name() != "grams3" {
                schema.add_field(entry);
            }
        }
        Index::create_in_dir(&old, schema.build()).unwrap();
        std::fs::write(old.join(SOURCES_FILE), generation_stamp(&sources)).unwrap();
        make_current(dir.path(), 1).unwrap();
        let err = refusal(dir.path(), &sources, "another layout is refused");
        assert!(err.contains("chaja reindex"), "{err}");

        let rebuilt = create_generation(dir.path(), &sources).unwrap();
        rebuilt.writer(16 << 20).unwrap().commit(0).unwrap();
        publish(dir.path(), rebuilt.id).unwrap();
        drop(rebuilt);
        let index = SearchIndex::open_for_serving(dir.path(), &sources).unwrap();
        assert_eq!(index.live().id, 2);
        drop(index);

        // The same schema without the layout line (what an older version
        // wrote) is refused too.
        std::fs::write(
            generation_path(dir.path(), 2).join(SOURCES_FILE),
            sources.stamp(),
        )
        .unwrap();
        let err = refusal(
            dir.path(),
            &sources,
            "a stamp without the layout line is refused",
        );
        assert!(
            err.contains("chaja reindex") && err.contains("another layout"),
            "{err}"
        );
    }

    /// Why opening the index under `root` for `sources` fails; `why` says
    /// what should have made it fail.
    fn refusal(root: &Path, sources: &Sources, why: &str) -> String {
        SearchIndex::open_or_create(root, sources)
            .err()
            .expect(why)
            .to_string()
    }

    /// An index holding one row of this title and these body fields.
    fn one_row(title: Option<&str>, body: &[&str]) -> (tempfile::TempDir, Generation) {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer(32 << 20).unwrap();
        let mut d = doc(1, 1);
        d.title = title.map(str::to_owned);
        d.body = body.iter().map(|b| b.to_string()).collect();
        writer.upsert(&d).unwrap();
        writer.commit(1).unwrap();
        generation.reader.reload().unwrap();
        (dir, generation)
    }

    /// The total of query `q`.
    fn total_of(generation: &Generation, q: &str) -> u64 {
        use crate::search::{search, Request};
        let request = Request::newest_first(chaja_core::text::parse_query(q), 1);
        search(generation, &request).unwrap().total
    }

    /// A keyword never matches across two body fields, as `LIKE` on each
    /// column would not: `스프링` ends one field and `링부트` starts the next.
    #[test]
    fn no_match_spans_two_body_fields() {
        let (_dir, generation) = one_row(None, &["설정 스프링", "링부트 끝"]);
        let total = |q: &str| total_of(&generation, q);
        assert_eq!(total("스프링"), 1);
        assert_eq!(total("링부트"), 1);
        for across in ["스프링부트", "링링", "링링부", "정 스프링링부트"] {
            assert_eq!(total(across), 0, "{across}");
        }
    }

    /// Nor across the title and the first body field, which the gram
    /// fields index as one value; each keyword class (1–4 characters as
    /// one term, longer as a phrase) finds what each field holds, at
    /// either end.
    #[test]
    fn no_match_spans_title_and_body() {
        let (_dir, generation) = one_row(Some("스프링"), &["부트 설정법"]);
        let total = |q: &str| total_of(&generation, q);
        for within in [
            "스",
            "링",
            "스프",
            "스프링",
            "부트",
            "부트 설",
            "부트 설정",
            "부트 설정법",
            "정법",
        ] {
            assert_eq!(total(within), 1, "{within}");
        }
        for across in [
            "링부",
            "링부트",
            "프링부트",
            "스프링부트",
            "\"스프링 부트\"",
            "\"링 부\"",
        ] {
            assert_eq!(total(across), 0, "{across}");
        }
    }

    /// Per-segment totals are reused only while the segment's deletes stay
    /// the same: after a delete the total is counted again.
    #[test]
    fn cached_segment_totals_follow_deletes() {
        use crate::search::{search, Request};
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer(32 << 20).unwrap();
        for id in 1..=5 {
            let mut d = doc(id, 1);
            d.body = vec!["설정을 바꿨습니다".to_owned()];
            writer.upsert(&d).unwrap();
        }
        writer.commit(1).unwrap();
        generation.reader.reload().unwrap();
        let request = Request::newest_first(chaja_core::text::parse_query("바꿨습니다"), 2);
        assert_eq!(search(&generation, &request).unwrap().total, 5);
        generation.totals.run_pending_tasks();
        let segments = generation.reader.searcher().segment_readers().len() as u64;
        assert_eq!(
            generation.totals.entry_count(),
            segments,
            "one total per segment"
        );
        assert_eq!(search(&generation, &request).unwrap().total, 5);
        writer.delete(SourceId::from_index(0), "3");
        writer.commit(2).unwrap();
        generation.reader.reload().unwrap();
        let response = search(&generation, &request).unwrap();
        assert_eq!(response.total, 4);
        assert_eq!(
            response
                .hits
                .iter()
                .map(|h| h.key.clone())
                .collect::<Vec<_>>(),
            [
                chaja_core::model::Key::Int(5),
                chaja_core::model::Key::Int(4)
            ]
        );
    }
}
