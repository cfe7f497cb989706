//! Writing a generation: a row's morphemes, then its document, upserted or
//! deleted by key, and commits that carry the checkpoint.

use tantivy::indexer::UserOperation;
use tantivy::schema::Term;
use tantivy::{IndexWriter, TantivyDocument};

use chaja_core::model::Doc;
use chaja_core::sources::SourceId;
use chaja_core::text::normalize;

use crate::attr_layout::AttrLayout;
use crate::checkpoint::Checkpoint;
use crate::common_grams::{Fourgrams, PositionsShare, Trigrams, COMMON_SHARE};
use crate::order::{clamp_time, sort_key, PATCH_ORDER, PATCH_TIME};
use crate::schema::Fields;
use crate::tokenizer::distinct_grams;
use crate::uid::{key_term, tag, uid};
use crate::{morph, Result};

/// Joins a row's body fields in the stored `content` field, and the title
/// and the body fields in the gram fields (see `DocWriter::add`). A
/// `char`, so that splitting a hit's content on it is a `memchr`, not a
/// substring search through the whole text.
pub const BODY_SEPARATOR: char = '\u{0}';

/// A row's attributes as the JSON object stored for its hit.
pub(crate) fn attributes_json(attributes: &[(String, chaja_core::model::AttrValue)]) -> String {
    let stored: serde_json::Map<String, serde_json::Value> = attributes
        .iter()
        .map(|(name, value)| (name.clone(), value.to_json()))
        .collect();
    serde_json::Value::Object(stored).to_string()
}

/// A row's morphemes, found before the row reaches the writer.
///
/// tantivy tokenizes on its own indexing threads; handing it the morphemes
/// ready-made lets a rebuild run lindera on threads of its own, a page
/// ahead, through the cache of sentences met before (see
/// `morph::Analyzer::index_morphemes`). They go
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
        let mut morphemes = Morphemes::default();
        if let Some(title) = &doc.title {
            analyzer.index_morphemes(title, &mut morphemes.title);
        }
        for text in &doc.body {
            analyzer.index_morphemes(text, &mut morphemes.content);
        }
        morphemes
    }
}

/// How the serving writer hands a round's changes to its indexing threads.
///
/// Every round commits, and a commit ends one segment for each indexing
/// thread that was handed documents, a fixed cost whatever was written. A
/// storm of 500 likes a second (100k rows, 2 cores) took 181 ms a commit
/// when its patches went to two threads and 77 ms on one, and its changes
/// were searchable in p99 1.1 s against 0.36 s. A backlog of text rows is
/// different: a round of 2,000 on one thread waits on it for as long again
/// as the rows' analysis took, while the other core idles. On two threads
/// 20,000 text edits were applied at 995–1,019 rows/s against 848–857 on
/// one (docs/benchmarks/036-text-edits-on-two-indexing-threads.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pace {
    /// Changes as they come: a round's operations are held and handed
    /// over at its commit as one batch (`IndexWriter::run`), which one
    /// indexing thread takes whole, so the commit ends one segment. The
    /// mirror holds fewer than half a batch of documents this way (1,000
    /// by default); larger rounds are bursts.
    #[default]
    Steady,
    /// A backlog of text rows: each operation is handed over at once, and
    /// the writer's indexing threads share the round's documents while
    /// the next ones are analysed.
    Burst,
}

/// The one writer of a generation: upserts, deletes, commits with the outbox
/// position.
pub struct DocWriter {
    pub(crate) writer: IndexWriter<TantivyDocument>,
    pub(crate) fields: Fields,
    pub(crate) layout: AttrLayout,
    /// Operations held for one batch at [`Pace::Steady`], in order: a
    /// batch's operations keep their order, as single ones do.
    pub(crate) held: Option<Vec<UserOperation<TantivyDocument>>>,
}

impl DocWriter {
    /// Sets how the next operations are handed to tantivy (see [`Pace`]).
    /// Operations held so far go first, so their order is kept.
    pub fn set_pace(&mut self, pace: Pace) -> Result<()> {
        match pace {
            Pace::Steady => {
                self.held.get_or_insert_with(Vec::new);
            }
            Pace::Burst => {
                self.hand_over()?;
                self.held = None;
            }
        }
        Ok(())
    }

    /// Hands the held operations, if any, to tantivy as one batch.
    fn hand_over(&mut self) -> Result<()> {
        if let Some(held) = self.held.as_mut().filter(|held| !held.is_empty()) {
            self.writer.run(std::mem::take(held))?;
        }
        Ok(())
    }

    fn send_add(&mut self, doc: TantivyDocument) -> Result<()> {
        match &mut self.held {
            Some(held) => held.push(UserOperation::Add(doc)),
            None => {
                self.writer.add_document(doc)?;
            }
        }
        Ok(())
    }

    fn send_delete(&mut self, term: Term) {
        match &mut self.held {
            Some(held) => held.push(UserOperation::Delete(term)),
            None => {
                self.writer.delete_term(term);
            }
        }
    }

    /// Replaces whatever the index holds for this row.
    pub fn upsert(&mut self, doc: &Doc) -> Result<()> {
        self.upsert_with(doc, Morphemes::of(doc))
    }

    /// [`DocWriter::upsert`] with the row's morphemes already found (a
    /// batch finds them on several threads). A patch of the row goes too:
    /// the new document holds its attributes.
    pub fn upsert_with(&mut self, doc: &Doc, morphemes: Morphemes) -> Result<()> {
        self.delete(doc.source, &doc.key.text());
        self.add(doc, morphemes)
    }

    /// Writes the row's attributes as a patch of its document, replacing
    /// any earlier patch (see `patches`): for a row whose text, time and
    /// key are as its document holds them. No analysis, and a document of
    /// four small fields instead of ~6,000 grams.
    pub fn patch(&mut self, doc: &Doc) -> Result<()> {
        let key = key_term(doc.source, &doc.key.text());
        self.unpatch_term(&key);
        let f = &self.fields;
        let mut d = TantivyDocument::new();
        d.add_text(f.patch, &key);
        d.add_i64(f.created_at, PATCH_TIME);
        d.add_u64(f.order, PATCH_ORDER);
        d.add_u64(f.digest, doc.digest());
        d.add_text(f.attributes, attributes_json(&doc.attributes));
        self.send_add(d)
    }

    /// Drops the row's patch, if any: its attributes are back to what its
    /// document holds.
    pub fn unpatch(&mut self, source: SourceId, key_text: &str) {
        self.unpatch_term(&key_term(source, key_text));
    }

    fn unpatch_term(&mut self, key: &str) {
        self.send_delete(Term::from_field_text(self.fields.patch, key));
    }

    /// Adds a row the index does not hold yet, with its morphemes: a
    /// rebuild reads each row once into an empty generation. Skipping the
    /// delete matters there, since every delete is looked up in every
    /// segment at commit.
    pub fn add(&mut self, doc: &Doc, morphemes: Morphemes) -> Result<()> {
        let f = &self.fields;
        let mut d = TantivyDocument::new();
        d.add_u64(f.uid, uid(&doc.key));
        d.add_u64(f.tag, tag(doc.source, &doc.key));
        d.add_text(f.key, key_term(doc.source, &doc.key.text()));
        d.add_i64(f.created_at, clamp_time(doc.created_at));
        d.add_u64(f.order, sort_key(doc.source, doc.created_at));
        d.add_u64(f.digest, doc.digest());
        d.add_u64(f.text_digest, doc.text_digest());
        if !doc.attributes.is_empty() {
            for (name, value) in &doc.attributes {
                if let Some(text) = value.filter_text() {
                    d.add_text(f.attrs, format!("{name}={text}"));
                }
            }
            d.add_text(f.attributes, attributes_json(&doc.attributes));
            self.layout.add_columns(f, doc, &mut d);
        }
        // Snippets split the body at the separator again (see `gram_text`).
        let body = joined_body(doc);
        d.add_bytes(f.content, body.as_bytes());
        if let Some(title) = &doc.title {
            d.add_text(f.title, title);
            d.add_text(f.title_morph, morphemes.title);
        }
        let grams_of = gram_text(doc.title.as_deref(), body);
        // The 4-gram tokenizer normalizes on tantivy's indexing thread; the
        // shorter grams are found here, on the thread that feeds it.
        let [chars, grams2, grams3, rare4] =
            distinct_grams(&normalize(&grams_of), &f.trigrams, &f.fourgrams);
        d.add_text(f.grams4, &grams_of);
        if !rare4.is_empty() {
            d.add_text(f.grams4_rare, rare4);
        }
        d.add_text(f.grams3, grams3);
        d.add_text(f.grams2, grams2);
        d.add_text(f.chars, chars);
        d.add_text(f.content_morph, morphemes.content);
        self.send_add(d)
    }

    /// Removes the row of `source` whose key reads `key_text`, and its
    /// patch.
    pub fn delete(&mut self, source: SourceId, key_text: &str) {
        let key = key_term(source, key_text);
        self.send_delete(Term::from_field_text(self.fields.key, &key));
        self.unpatch_term(&key);
    }

    /// Commits everything so far as having applied the outbox up to `seq`,
    /// with nothing pending.
    pub fn commit(&mut self, outbox_seq: i64) -> Result<()> {
        self.commit_checkpoint(&Checkpoint::at(outbox_seq))
    }

    /// Commits everything so far with what it applied of the outbox.
    pub fn commit_checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        self.hand_over()?;
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

/// The text a row's grams are cut from: its `body` fields as one value,
/// joined by NUL ([`joined_body`]), after its title and a NUL. A keyword
/// never holds a NUL (control characters are refused in queries), so no
/// gram that spans two columns can match, and a phrase does not run from
/// one column into the next, as `LIKE` on each would not. (tantivy's gap
/// between the values of a field is one position, too little for phrases
/// of 4-grams.)
fn gram_text(title: Option<&str>, body: String) -> String {
    match title {
        Some(title) => format!("{title}{BODY_SEPARATOR}{body}"),
        None => body,
    }
}

/// A row's body fields as one value, joined by [`BODY_SEPARATOR`].
fn joined_body(doc: &Doc) -> String {
    doc.body.join(BODY_SEPARATOR.encode_utf8(&mut [0; 4]))
}

/// The trigrams the `grams3` field of a generation built from rows like
/// `sample` holds, those in 3% of them or more, and the 4-grams `grams4`
/// keeps positions for, those in `positions` of them or more (0: every
/// one). See `common_grams`.
pub fn common_grams(sample: &[Doc], positions: PositionsShare) -> (Trigrams, Fourgrams) {
    let texts: Vec<String> = sample
        .iter()
        .map(|doc| gram_text(doc.title.as_deref(), joined_body(doc)))
        .collect();
    (
        Trigrams::choose(&texts, COMMON_SHARE),
        Fourgrams::choose(&texts, positions.get()),
    )
}
