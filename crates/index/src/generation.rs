//! A generation: one tantivy index under `ROOT/gen-<n>/`, opened with its
//! tokenizers, reader and field handles, and the stamps that say what it
//! was built for (the sources, the layout, the analyzer).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::MmapDirectory;
use tantivy::tokenizer::WhitespaceTokenizer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument};

use chaja_core::sources::{SourceId, Sources, MAX_SOURCES};

use crate::attributes::{AttrArrays, AttrLayout, SegmentFacetValues};
use crate::checkpoint::{read_checkpoint, Checkpoint};
use crate::schema::{build_schema, Fields, BIGRAM, FOURGRAM, MORPH, TRIGRAM, UNIGRAM};
use crate::tokenizer::GramTokenizer;
use crate::uid::{key_term, tag_source};
use crate::writer::{for_each_live_key, DocWriter};
use crate::{morph, search, IndexError, Result};

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
const LAYOUT: &str = "layout: grams4 tag columns";

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
    /// Exact totals of queries per segment (see `search`).
    pub totals: SegmentTotals,
    /// Facet counts of queries per segment, alike (see `search`).
    pub facets: SegmentFacets,
    /// Each segment's facet ordinals and numbers by document (see
    /// `attributes`).
    pub attr_arrays: AttrArrays,
    /// Matches searches have visited in this generation: the work counter
    /// that shows a stopped search stopped.
    pub scanned: std::sync::atomic::AtomicU64,
    /// Each segment's source of every document, one byte per document
    /// (see `search::doc_sources`).
    pub doc_sources: DocSources,
}

/// segment → the source position of each of its documents. A segment's
/// documents never change, so this is read from `tag` once per segment
/// (see `Generation::prime`), and dropped when the segment is merged away.
pub type DocSources = moka::sync::Cache<tantivy::index::SegmentId, Arc<[u8]>>;

/// (segment, its deleted-document count, query) → matching documents by
/// source (`search::SourceCounts`).
pub type SegmentTotals =
    moka::sync::Cache<(tantivy::index::SegmentId, u32, Arc<str>), search::SourceCounts>;

/// (segment, its deleted-document count, query and facets) → each facet's
/// counts by value in that segment; weighed by values held.
pub type SegmentFacets =
    moka::sync::Cache<(tantivy::index::SegmentId, u32, Arc<str>), Arc<SegmentFacetValues>>;

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
            layout: AttrLayout::of(sources),
            totals: moka::sync::Cache::new(100_000),
            facets: moka::sync::Cache::builder()
                .weigher(|_, values: &Arc<SegmentFacetValues>| {
                    let n: usize = values.iter().map(Vec::len).sum();
                    u32::try_from(n + 1).unwrap_or(u32::MAX)
                })
                .max_capacity(1_000_000)
                .build(),
            attr_arrays: AttrArrays::new(512 << 20),
            scanned: Default::default(),
            doc_sources: moka::sync::Cache::builder()
                .weigher(|_, sources: &Arc<[u8]>| u32::try_from(sources.len()).unwrap_or(u32::MAX))
                .max_capacity(1 << 30)
                .build(),
        })
    }

    /// Makes the last commit (and any merge published since) visible to
    /// searches, then [`Generation::prime`]s the segments. Blocking. Arrays
    /// that cannot be built are logged, not an error: the commit is made
    /// and visible, and a query builds what it needs.
    pub fn reload(&self) -> Result<()> {
        self.reader.reload()?;
        if let Err(e) = self.prime() {
            tracing::warn!(error = %e, generation = self.id, "building the per-segment arrays failed; queries build them");
        }
        Ok(())
    }

    /// Builds the per-document arrays the scan reads (sources, facet
    /// ordinals, numbers) for each segment that has none yet, and drops
    /// those of segments merged away. Blocking: one pass over each new
    /// segment's columns, so that no query pays for it.
    pub fn prime(&self) -> Result<()> {
        let searcher = self.reader.searcher();
        let mut live = std::collections::HashSet::new();
        for segment in searcher.segment_readers() {
            live.insert(segment.segment_id());
            search::doc_sources(&self.doc_sources, segment)?;
            self.attr_arrays.prime(segment, &self.layout)?;
        }
        crate::attributes::drop_merged(&self.doc_sources, &live, |id| *id);
        self.attr_arrays.retain(&live);
        Ok(())
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
    /// Blocking. A pass over the `uid` column finds candidates (rows of two
    /// sources may share an integer key, and a string key's uid is a hash,
    /// so a candidate may be no duplicate); only the segments
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

    /// The content digest (`Doc::digest`) the live document of each key
    /// holds, for the keys that have one. Blocking: a term lookup per key
    /// and segment, so the indexer can tell a row that did not change from
    /// one that did before it analyses anything.
    pub fn digests(
        &self,
        keys: &[(SourceId, &str)],
    ) -> Result<std::collections::HashMap<String, u64>> {
        let searcher = self.reader.searcher();
        let mut found = std::collections::HashMap::with_capacity(keys.len());
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.fields.key)?;
            let digest = segment.fast_fields().u64("digest")?;
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
                            found.insert(term_text.clone(), d);
                        }
                    }
                    doc = tantivy::DocSet::advance(&mut postings);
                }
            }
        }
        Ok(found)
    }

    /// Number of live documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Live documents by source, read from the `tag` column. Blocking: a
    /// pass over every document.
    pub fn docs_by_source(&self) -> Result<search::SourceCounts> {
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
            layout: self.layout.clone(),
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
