//! A generation: one tantivy index under `ROOT/gen-<n>/`, opened with its
//! tokenizers, reader and field handles, and the stamps that say what it
//! was built for (the sources, the layout, the analyzer).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use tantivy::directory::MmapDirectory;
use tantivy::index::SegmentId;
use tantivy::store::StoreReader;
use tantivy::tokenizer::WhitespaceTokenizer;
use tantivy::{DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument};

use chaja_core::sources::{SourceId, Sources, MAX_SOURCES};

use crate::attr_layout::AttrLayout;
use crate::caches::{Caches, SourceCounts};
use crate::checkpoint::{read_checkpoint, Checkpoint};
use crate::columns::SegmentColumns;
use crate::common_grams::{Fourgrams, Trigrams};
use crate::merges::{self, ApartMergePolicy, MergeHold, SegmentKinds};
use crate::patches::{Patches, Tracker};
use crate::schema::{
    build_schema, Fields, BIGRAM, FOURGRAM, MORPH, RARE_FOURGRAM, TRIGRAM, UNIGRAM,
};
use crate::tokenizer::{ChunkTokenizer, GramTokenizer};
use crate::uid::{for_each_live_key, key_term, tag_source};
use crate::writer::{DocWriter, Pace};
use crate::{morph, IndexError, Result};

/// Names what a generation was built with: the text normalization its grams
/// hold and the analyzer of its morphological fields.
pub(crate) const ANALYZER_FILE: &str = "analyzer";
/// Names the sources a generation was built for, one per line, in order
/// (a document stores its source's position), then [`LAYOUT`].
pub(crate) const SOURCES_FILE: &str = "sources";
/// The last line of [`SOURCES_FILE`]: the fields this version indexes.
/// Besides the schema check, it keeps a server of an older version (which
/// compares the file with its list of sources alone) from adopting a
/// rebuild in this layout, whose keywords it would look up in fields that
/// no longer hold them.
const LAYOUT: &str = "layout: grams4 tag columns patches by-source common-trigrams rare-fourgrams";

/// What [`SOURCES_FILE`] holds for a generation of `sources`.
pub(crate) fn generation_stamp(sources: &Sources) -> String {
    format!("{}\n{LAYOUT}", sources.stamp())
}
/// `Sources::definition` of what a generation was built from.
pub(crate) const DEFINITION_FILE: &str = "sources.definition";

/// The contents of [`ANALYZER_FILE`] for what this process builds.
pub(crate) fn analyzer_stamp() -> String {
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
    /// Which attributes the writer puts in columns (see `attributes`).
    pub layout: AttrLayout,
    /// What searches keep between queries (see `caches`).
    pub(crate) caches: Caches,
    /// What searches read: the reader's last reload and its patches.
    view: RwLock<Arc<View>>,
    /// What finds each reload's patches from the last one's; held while
    /// the view is refreshed, so that refreshes run one at a time.
    tracker: Mutex<Tracker>,
    /// What the serving writer's merge policy reads (see `merges`).
    kinds: Arc<RwLock<SegmentKinds>>,
    merge_hold: MergeHold,
    /// The segments its rebuild wrote, which the serving writer never
    /// merges (see `merges`).
    sealed: Arc<HashSet<SegmentId>>,
    #[cfg(feature = "faults")]
    faults: crate::faults::Faults,
}

/// A searcher and the attribute patches of the same reload (see
/// `patches`): what one search reads, so that the two never disagree.
pub struct View {
    pub searcher: Searcher,
    pub patches: Arc<Patches>,
    /// Each segment's columns, by segment ord (see `columns`).
    pub(crate) columns: Vec<SegmentColumns>,
    /// Each segment's doc store, by segment ord, for hits (see `stored`).
    pub(crate) stores: Vec<StoreReader>,
}

impl View {
    /// Names the reload this view is of, within the process: two views of
    /// one reload hold the same segments and the same patches.
    pub fn reload_id(&self) -> u64 {
        self.searcher.generation().generation_id()
    }
}

/// Each segment's doc store reader, by segment ord, each with its cache of
/// decompressed blocks.
fn open_stores(searcher: &Searcher) -> Result<Vec<StoreReader>> {
    Ok(searcher
        .segment_readers()
        .iter()
        .map(|segment| segment.get_store_reader(crate::stored::CACHED_BLOCKS))
        .collect::<std::io::Result<_>>()?)
}

/// Each segment's columns, by segment ord. Opened before the patches are
/// tracked, so that a failure leaves the tracker where it was.
fn open_columns(searcher: &Searcher) -> Result<Vec<SegmentColumns>> {
    Ok(searcher
        .segment_readers()
        .iter()
        .map(SegmentColumns::open)
        .collect::<tantivy::Result<_>>()?)
}

/// What the index holds of a row, for the indexer to tell what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexed {
    /// The document's `Doc::digest` and `Doc::text_digest`.
    pub digest: u64,
    pub text_digest: u64,
    /// The digest of the row's patch, if its attributes are patched.
    pub patched: Option<u64>,
    /// Live documents holding the row's key: more than one is a duplicate
    /// (left by a crash between a delete and its add being replayed),
    /// which a rewrite of the row ends, however alike the copies are.
    pub copies: u32,
}

impl Indexed {
    /// The digest of the row as searches see it.
    pub fn current(&self) -> u64 {
        self.patched.unwrap_or(self.digest)
    }
}

impl Generation {
    pub(crate) fn open(root: &Path, id: u64, sources: &Sources) -> Result<Generation> {
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
        Generation::from_index(id, path, index, sources)
    }

    pub(crate) fn from_index(
        id: u64,
        path: PathBuf,
        index: Index,
        sources: &Sources,
    ) -> Result<Generation> {
        let fourgrams = Fourgrams::load(&path)?;
        index
            .tokenizers()
            .register(FOURGRAM, GramTokenizer::fourgram(fourgrams.clone()));
        // The doc-id-only fields receive their distinct grams ready-cut
        // (see `tokenizer::distinct_grams`).
        index
            .tokenizers()
            .register(RARE_FOURGRAM, ChunkTokenizer::new(4));
        index.tokenizers().register(TRIGRAM, ChunkTokenizer::new(3));
        index.tokenizers().register(BIGRAM, ChunkTokenizer::new(2));
        index.tokenizers().register(UNIGRAM, ChunkTokenizer::new(1));
        // The morphological fields hold morphemes found before the writer,
        // joined by spaces (see `Morphemes`).
        index
            .tokenizers()
            .register(MORPH, WhitespaceTokenizer::default());
        let fields = Fields {
            trigrams: Trigrams::load(&path)?,
            fourgrams,
            ..Fields::from_schema(&index.schema())?
        };
        // Reloaded by the writer right after each commit, so a write is
        // visible as soon as it is committed.
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let layout = AttrLayout::of(sources);
        let mut tracker = Tracker::default();
        let searcher = reader.searcher();
        let columns = open_columns(&searcher)?;
        let stores = open_stores(&searcher)?;
        let patches = tracker.next(&searcher, &fields, &layout)?;
        let kinds = SegmentKinds::of(&tracker);
        let sealed = Arc::new(merges::sealed(&path));
        let view = View {
            searcher,
            patches: Arc::new(patches),
            columns,
            stores,
        };
        Ok(Generation {
            id,
            path,
            index,
            reader,
            fields,
            layout,
            caches: Caches::new(),
            view: RwLock::new(Arc::new(view)),
            tracker: Mutex::new(tracker),
            kinds: Arc::new(RwLock::new(kinds)),
            merge_hold: MergeHold::default(),
            sealed,
            #[cfg(feature = "faults")]
            faults: Default::default(),
        })
    }

    /// What a search reads: the last reload's searcher and its patches.
    pub fn view(&self) -> Arc<View> {
        self.view.read().expect("view lock poisoned").clone()
    }

    /// Makes the last commit (and any merge published since) visible to
    /// searches with its patches, then [`Generation::prime`]s the
    /// segments. Blocking. Arrays that cannot be built are logged, not an
    /// error: the commit is made and visible, and a query builds what it
    /// needs.
    pub fn reload(&self) -> Result<()> {
        self.reader.reload()?;
        #[cfg(feature = "faults")]
        self.faults.reload()?;
        self.refresh()?;
        if let Err(e) = self.prime() {
            tracing::warn!(error = %e, generation = self.id, "building the per-segment arrays failed; queries build them");
        }
        Ok(())
    }

    /// Makes the next `n` reloads fail after the reader reloaded, before
    /// searches see the commit (see `faults`).
    #[cfg(feature = "faults")]
    pub fn fail_next_reloads(&self, n: u32) {
        self.faults.fail_reloads(n);
    }

    /// Reload failures still armed.
    #[cfg(feature = "faults")]
    pub fn reload_failures_left(&self) -> u32 {
        self.faults.reloads_left()
    }

    /// Makes the reader's current searcher, with its patches, the view
    /// searches read. Blocking: reads the new segments' patches and finds
    /// the documents of patches that came or changed.
    fn refresh(&self) -> Result<()> {
        let mut tracker = self.tracker.lock().expect("patch lock poisoned");
        let searcher = self.reader.searcher();
        let columns = open_columns(&searcher)?;
        let stores = open_stores(&searcher)?;
        let patches = tracker.next(&searcher, &self.fields, &self.layout)?;
        let view = View {
            searcher,
            patches: Arc::new(patches),
            columns,
            stores,
        };
        *self.kinds.write().expect("segment kinds lock poisoned") = SegmentKinds::of(&tracker);
        *self.view.write().expect("view lock poisoned") = Arc::new(view);
        Ok(())
    }

    /// Builds the per-document arrays the scan reads (sources, facet
    /// ordinals, numbers) for each segment of the view that has none yet,
    /// and drops those of segments merged away. Blocking: one pass over
    /// each new segment's columns, so that no query pays for it.
    pub fn prime(&self) -> Result<()> {
        self.caches.prime(&self.view().searcher, &self.layout)
    }

    /// Matches searches have visited in this generation: the work counter
    /// that shows a stopped search stopped.
    pub fn scanned(&self) -> u64 {
        self.caches.scanned()
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
    /// Blocking. A pass over the `uid` and `tag` columns finds candidates:
    /// together they name a row (see `uid`), so two live documents with
    /// the same pair are a duplicate but for a 123-bit hash collision of
    /// string keys. Only the segments that hold a candidate have their keys
    /// read, to confirm it. (By `uid` alone, the integer keys that two
    /// sources share were candidates too: at 1M rows of the demo, a third
    /// of the rows, and every segment's keys were read every 10 s.)
    /// Reads the view, so reload first to scan the last commit.
    pub fn duplicate_keys(&self) -> Result<Vec<String>> {
        let view = self.view();
        let segments = view.searcher.segment_readers();
        let name = |columns: &SegmentColumns, doc: DocId| {
            Some((columns.uid.first(doc)?, columns.tag.first(doc)?))
        };
        let mut seen = std::collections::HashSet::with_capacity(view.searcher.num_docs() as usize);
        let mut candidates = std::collections::HashSet::new();
        for (segment, columns) in segments.iter().zip(&view.columns) {
            for doc in segment.doc_ids_alive() {
                if let Some(row) = name(columns, doc) {
                    if !seen.insert(row) {
                        candidates.insert(row);
                    }
                }
            }
        }
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut counts: std::collections::HashMap<String, u32> = Default::default();
        for (segment, columns) in segments.iter().zip(&view.columns) {
            let holds = |doc| name(columns, doc).is_some_and(|row| candidates.contains(&row));
            if !segment.doc_ids_alive().any(holds) {
                continue;
            }
            for_each_live_key(segment, |doc, key| {
                if holds(doc) {
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

    /// What the index holds of each of these rows, for those it holds.
    /// Blocking: a term lookup per key and segment, so the indexer can tell
    /// a row that did not change from one that did before it analyses
    /// anything, and one whose attributes alone changed from the rest.
    pub fn indexed(&self, keys: &[(SourceId, &str)]) -> Result<HashMap<String, Indexed>> {
        let view = self.view();
        let mut found = HashMap::with_capacity(keys.len());
        for segment in view.searcher.segment_readers() {
            let inverted = segment.inverted_index(self.fields.key)?;
            let digest = segment.fast_fields().u64("digest")?;
            let text_digest = segment.fast_fields().u64("text_digest")?;
            let alive = segment.alive_bitset();
            for (source, key) in keys {
                let term_text = key_term(*source, key);
                let term = tantivy::Term::from_field_text(self.fields.key, &term_text);
                let Some(mut postings) =
                    inverted.read_postings(&term, tantivy::schema::IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut doc = tantivy::DocSet::doc(&postings);
                while doc != tantivy::TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        if let Some(d) = digest.first(doc) {
                            let patched =
                                view.patches.at(segment.segment_id(), doc).map(|p| p.digest);
                            // The last copy's digests stand for the row;
                            // every copy is counted.
                            let copies = found.get(&term_text).map_or(0, |i: &Indexed| i.copies);
                            let indexed = Indexed {
                                digest: d,
                                text_digest: text_digest.first(doc).unwrap_or_default(),
                                patched,
                                copies: copies + 1,
                            };
                            found.insert(term_text.clone(), indexed);
                        }
                    }
                    doc = tantivy::DocSet::advance(&mut postings);
                }
            }
        }
        Ok(found)
    }

    /// Each live document's key and digest as searches see it (its
    /// patch's, when patched), and the keys held by more than one
    /// document. Blocking: a pass over every document.
    pub fn digests(&self) -> Result<(HashMap<String, u64>, Vec<String>)> {
        let view = self.view();
        let mut entries = HashMap::with_capacity(view.searcher.num_docs() as usize);
        let mut duplicates = Vec::new();
        for segment in view.searcher.segment_readers() {
            let digests = segment.fast_fields().u64("digest")?;
            for_each_live_key(segment, |doc, key| {
                let digest = digests.first(doc).unwrap_or_default();
                if entries.insert(key.to_owned(), digest).is_some() {
                    duplicates.push(key.to_owned());
                }
            })?;
        }
        for (key, digest) in view.patches.digests() {
            if let Some(entry) = entries.get_mut(key) {
                *entry = digest;
            }
        }
        Ok((entries, duplicates))
    }

    /// Number of live documents (rows: patches are not counted).
    pub fn num_docs(&self) -> u64 {
        let view = self.view();
        view.searcher.num_docs() - view.patches.documents
    }

    /// Live documents by source, read from the `tag` column. Blocking: a
    /// pass over every document.
    pub fn docs_by_source(&self) -> Result<SourceCounts> {
        let searcher = self.reader.searcher();
        let mut counts = [0u64; MAX_SOURCES];
        for segment in searcher.segment_readers() {
            let tag = segment.fast_fields().u64("tag")?;
            for doc in segment.doc_ids_alive() {
                if let Some(t) = tag.first(doc) {
                    counts[tag_source(t)] += 1;
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

    /// The serving writer: two indexing threads, used one at a time except
    /// in a burst (see [`Pace`]), merging segments of patches apart from
    /// segments of documents (see `merges`). It starts at [`Pace::Steady`].
    pub fn writer(&self, memory_budget: usize) -> Result<DocWriter> {
        let mut writer = self.writer_with_threads(memory_budget, 2)?;
        writer
            .writer
            .set_merge_policy(Box::new(ApartMergePolicy::new(
                self.kinds.clone(),
                self.merge_hold.clone(),
                self.sealed.clone(),
            )));
        writer.set_pace(Pace::Steady)?;
        Ok(writer)
    }

    /// Tells the serving writer's merge policy whether a burst is on (the
    /// indexer has more waiting): merges of small segments of documents
    /// wait until it ends (see `merges`). Takes effect at the next commit.
    /// Returns whether merges were held before.
    pub fn hold_merges(&self, burst: bool) -> bool {
        self.merge_hold.set(burst)
    }

    /// A writer with up to `threads` indexing threads sharing
    /// `memory_budget`: as many as the budget allows, as `Index::writer`
    /// does, that merges nothing. A rebuild's thread flushes a segment
    /// each time its share fills, and tantivy's log policy merged each 8
    /// of them as the rebuild went on: at 1M rows with 256 MiB a thread,
    /// 48 segments of 18,000 rows became 6, and those merges took a tenth
    /// of its CPU. With 1 GiB a thread, a rebuild writes ten alike
    /// segments of about 90,000 rows and merges none: 488–534 s against
    /// 539–605 s in three alternated pairs (docs/benchmarks/046-rebuild-without-merges.md).
    ///
    /// tantivy refuses less than 15 MB per thread (its
    /// `MEMORY_BUDGET_NUM_BYTES_MIN`, not exported) and more than 8 threads.
    pub fn writer_with_threads(&self, memory_budget: usize, threads: usize) -> Result<DocWriter> {
        let threads = threads.min(8).min(memory_budget / 15_000_000).max(1);
        let writer: IndexWriter<TantivyDocument> =
            self.index.writer_with_num_threads(threads, memory_budget)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        Ok(DocWriter {
            writer,
            fields: self.fields.clone(),
            layout: self.layout.clone(),
            held: None,
        })
    }
}

/// Whether generation `id` under `root` was built for `sources`, in this
/// version's schema: one that was not cannot be served.
pub(crate) fn built_for(root: &Path, id: u64, sources: &Sources) -> bool {
    let path = generation_path(root, id);
    std::fs::read_to_string(path.join(SOURCES_FILE))
        .is_ok_and(|stamp| stamp.trim() == generation_stamp(sources))
        && Index::open_in_dir(&path).is_ok_and(|index| index.schema() == build_schema())
}

pub(crate) fn generation_path(root: &Path, id: u64) -> PathBuf {
    root.join(format!("gen-{id:06}"))
}
