//! The index schema: what a hit needs, so a search never reads the database.

use tantivy::schema::{
    Field, IndexRecordOption, JsonObjectOptions, NumericOptions, Schema, TextFieldIndexing,
    TextOptions, FAST, INDEXED, STORED, STRING,
};

use crate::common_grams::{Fourgrams, Trigrams};

/// The JSON fields of attribute columns, as the schema names them (see
/// `attributes`).
pub(crate) const NUMBERS: &str = "numbers";
pub(crate) const FACETS: &str = "facets";

/// Tokenizer names, registered on every opened index.
pub const FOURGRAM: &str = "chaja_fourgram";
pub const RARE_FOURGRAM: &str = "chaja_rare_fourgram";
pub const TRIGRAM: &str = "chaja_trigram";
pub const BIGRAM: &str = "chaja_bigram";
pub const UNIGRAM: &str = "chaja_unigram";
pub const MORPH: &str = "chaja_morph";

/// Field handles, resolved once per opened index.
#[derive(Clone, Debug)]
pub struct Fields {
    /// The integer key, sign bit flipped (or 64 bits of a string key's
    /// hash): with `tag`, the tiebreak of the sort (`created_at DESC`, then
    /// the key), unique per row (see `uid`).
    pub uid: Field,
    /// The row's source in the low 4 bits, bit 4 set for a string key, and
    /// above them 59 more bits of a string key's hash: the source a match
    /// counts for.
    pub tag: Field,
    /// `<source>:<key>`, the key as the outbox writes it: the delete term,
    /// stored for the hit's `id`, and a fast column for `verify`.
    pub key: Field,
    /// Milliseconds since the epoch.
    pub created_at: Field,
    /// The segment order: source, then `created_at`, descending (see
    /// `order`). The index is sorted on it.
    pub order: Field,
    /// `Doc::digest`: what `verify` compares with the table (a patch's
    /// digest, on a patch).
    pub digest: Field,
    /// `Doc::text_digest`: the row without its attributes. An update whose
    /// text digest equals the document's changed only attributes, and is
    /// written as a patch (see `patches`).
    pub text_digest: Field,
    /// On a patch only: the `key` term of the row it patches.
    pub patch: Field,
    /// `name=value` of each attribute: what `attr.<name>=<value>` matches.
    pub attrs: Field,
    /// The attributes as a JSON object, stored for the hit.
    pub attributes: Field,
    /// Declared numeric attributes, a column each (see `attributes`).
    pub numbers: Field,
    /// Declared facets, a text column each (see `attributes`).
    pub facets: Field,
    /// The original title and body fields, stored for hits and snippets.
    pub title: Field,
    pub content: Field,
    /// The gram fields index one value per row: the title and the body
    /// fields joined by NUL (see `DocWriter::add`), so that a keyword of up
    /// to 4 characters is exactly one term of one field, whose postings
    /// say which rows hold it with no union of title and body matches.
    ///
    /// 4-grams with frequencies and positions: a 4-character keyword is one
    /// term, a longer one a phrase of few, rare terms (so few candidates to
    /// check positions of), and BM25 has what it needs. Only the 4-grams
    /// `fourgrams` holds; by default every one.
    pub grams4: Field,
    /// Which 4-grams `grams4` holds (see `common_grams`).
    pub fourgrams: Fourgrams,
    /// The other 4-grams, doc ids only: a long keyword with one of them is
    /// checked against its candidates' stored text (see `search::checked`).
    pub grams4_rare: Field,
    /// Trigrams, doc ids only: a 3-character keyword is one term, counted
    /// from its postings, when `trigrams` holds it.
    pub grams3: Field,
    /// Which trigrams `grams3` holds: the common ones of the generation
    /// (see `trigrams`).
    pub trigrams: Trigrams,
    /// Bigrams, doc ids only: the same for 2-character keywords.
    pub grams2: Field,
    /// Every character, doc ids only: the same for 1-character keywords.
    pub chars: Field,
    /// Content morphemes of title and content (see `morph`), with
    /// frequencies for BM25: what `sort=relevance` scores and `match=morph`
    /// matches.
    pub title_morph: Field,
    pub content_morph: Field,
}

impl Fields {
    pub fn from_schema(schema: &Schema) -> tantivy::Result<Fields> {
        Ok(Fields {
            uid: schema.get_field("uid")?,
            tag: schema.get_field("tag")?,
            key: schema.get_field("key")?,
            created_at: schema.get_field("created_at")?,
            order: schema.get_field("order")?,
            digest: schema.get_field("digest")?,
            text_digest: schema.get_field("text_digest")?,
            patch: schema.get_field("patch")?,
            attrs: schema.get_field("attrs")?,
            attributes: schema.get_field("attributes")?,
            numbers: schema.get_field(NUMBERS)?,
            facets: schema.get_field(FACETS)?,
            title: schema.get_field("title")?,
            content: schema.get_field("content")?,
            grams4: schema.get_field("grams4")?,
            fourgrams: Fourgrams::every(),
            grams4_rare: schema.get_field("grams4_rare")?,
            grams3: schema.get_field("grams3")?,
            trigrams: Trigrams::every(),
            grams2: schema.get_field("grams2")?,
            chars: schema.get_field("chars")?,
            title_morph: schema.get_field("title_morph")?,
            content_morph: schema.get_field("content_morph")?,
        })
    }
}

pub fn build_schema() -> Schema {
    let mut b = Schema::builder();
    let number = || NumericOptions::default() | FAST | INDEXED;
    b.add_u64_field("uid", NumericOptions::default() | FAST);
    b.add_u64_field("tag", NumericOptions::default() | FAST);
    b.add_text_field("key", (STRING | STORED).set_fast("raw"));
    b.add_i64_field("created_at", number());
    b.add_u64_field("order", NumericOptions::default() | FAST);
    b.add_u64_field("digest", NumericOptions::default() | FAST);
    b.add_u64_field("text_digest", NumericOptions::default() | FAST);
    // The delete term of a patch, and a column to read it back.
    b.add_text_field("patch", STRING.set_fast("raw"));
    b.add_text_field("attrs", STRING);
    b.add_text_field("attributes", STORED);
    // Columns only: ranges, sorts and facets read them per match, and
    // nothing looks a value up by term.
    b.add_json_field(NUMBERS, JsonObjectOptions::default().set_fast("raw"));
    b.add_json_field(FACETS, JsonObjectOptions::default().set_fast("raw"));
    b.add_text_field("title", STORED);
    // Bytes, not text: a hit reads its body from the document's bytes and
    // checks its UTF-8 itself, with SIMD (see `stored`); a stored text is
    // checked by tantivy's reader one character at a time.
    b.add_bytes_field("content", STORED);
    b.add_text_field(
        "grams4",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(FOURGRAM)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        ),
    );
    let doc_ids_only = |tokenizer| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::Basic)
                .set_fieldnorms(false),
        )
    };
    b.add_text_field("grams4_rare", doc_ids_only(RARE_FOURGRAM));
    b.add_text_field("grams3", doc_ids_only(TRIGRAM));
    b.add_text_field("grams2", doc_ids_only(BIGRAM));
    b.add_text_field("chars", doc_ids_only(UNIGRAM));
    let morphemes = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(MORPH)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    b.add_text_field("title_morph", morphemes.clone());
    b.add_text_field("content_morph", morphemes);
    b.build()
}
