//! The index schema: what a hit needs, so a search never reads the database.

use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, FAST,
    INDEXED, STORED,
};

/// Tokenizer names, registered on every opened index.
pub const TRIGRAM: &str = "chaja_trigram";
pub const BIGRAM: &str = "chaja_bigram";
pub const UNIGRAM: &str = "chaja_unigram";
pub const MORPH: &str = "chaja_morph";

/// Field handles, resolved once per opened index.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// `id << 1 | kind`: unique per row, the delete key, and the tiebreak of
    /// the sort (`created_at DESC, id DESC`, then kind).
    pub uid: Field,
    /// Milliseconds since the epoch. The index is sorted on it, newest first.
    pub created_at: Field,
    pub updated_at: Field,
    pub author_id: Field,
    /// The question a review belongs to; 0 for questions.
    pub question_id: Field,
    /// Original text, stored for snippets; indexed as positional trigrams
    /// with frequencies: a 3-character keyword is one term, a longer one a
    /// phrase of few, sparse terms, and BM25 has what it needs.
    pub title: Field,
    pub content: Field,
    /// Bigrams of title and content, doc ids only: a 2-character keyword is
    /// one term, counted from its postings.
    pub grams2: Field,
    /// Every character of title and content, doc ids only: the same for
    /// 1-character keywords.
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
            created_at: schema.get_field("created_at")?,
            updated_at: schema.get_field("updated_at")?,
            author_id: schema.get_field("author_id")?,
            question_id: schema.get_field("question_id")?,
            title: schema.get_field("title")?,
            content: schema.get_field("content")?,
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
    b.add_u64_field("uid", number());
    b.add_i64_field("created_at", number());
    b.add_i64_field("updated_at", NumericOptions::default() | FAST);
    b.add_u64_field("author_id", number());
    b.add_u64_field("question_id", NumericOptions::default() | STORED);
    let trigrams = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TRIGRAM)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    b.add_text_field("title", trigrams.clone());
    b.add_text_field("content", trigrams);
    let doc_ids_only = |tokenizer| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::Basic)
                .set_fieldnorms(false),
        )
    };
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
