//! From a keyword to the terms that find it: the gram field of a keyword
//! of up to four characters, the 4-grams of a longer one, the morphemes of
//! a query. The leaf every query and count reads, so that none of them
//! imports another to learn how a keyword is spelled in the index.

use tantivy::query::{Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Term};

use chaja_core::text::Keyword;

use super::request::Request;
use crate::morph;
use crate::schema::Fields;
use crate::tokenizer::held_cover;

/// The gram field in which a keyword of up to four characters is one term:
/// every one but a trigram the generation's `grams3` does not hold (see
/// `trigrams`).
pub(super) fn gram_field(fields: &Fields, keyword: &Keyword) -> Option<Field> {
    match keyword.char_len() {
        1 => Some(fields.chars),
        2 => Some(fields.grams2),
        3 => fields
            .trigrams
            .holds(keyword.as_str())
            .then_some(fields.grams3),
        4 => Some(fourgram_field(fields, keyword.as_str())),
        _ => None,
    }
}

/// The field that holds the 4-gram `gram`: `grams4`, with positions, or
/// `grams4_rare` (see `common_grams`).
pub(super) fn fourgram_field(fields: &Fields, gram: &str) -> Field {
    match fields.fourgrams.holds(gram) {
        true => fields.grams4,
        false => fields.grams4_rare,
    }
}

/// Whether `keyword` is a trigram the generation's `grams3` holds only
/// where it ends a row's text: a rare one (see `common_grams`).
pub(super) fn rare_trigram(fields: &Fields, keyword: &Keyword) -> bool {
    keyword.char_len() == 3 && !fields.trigrams.holds(keyword.as_str())
}

/// How a keyword of five or more characters is matched.
pub(super) enum Long {
    /// A slop-0 phrase of the fewest 4-grams with positions that pin every
    /// character, at their offsets.
    Phrase(Vec<(usize, Term)>),
    /// Some character is in no 4-gram with positions: the rows holding
    /// each of its 4-grams, checked against their text (see `contains`).
    Contains(Vec<Term>),
}

impl Long {
    pub(super) fn of(fields: &Fields, keyword: &str) -> Long {
        if let Some(cover) = held_cover(keyword, |gram| fields.fourgrams.holds(gram)) {
            let terms = cover
                .into_iter()
                .map(|(offset, gram)| (offset, Term::from_field_text(fields.grams4, &gram)))
                .collect();
            return Long::Phrase(terms);
        }
        let chars: Vec<char> = keyword.chars().collect();
        let mut grams: Vec<String> = chars.windows(4).map(|w| w.iter().collect()).collect();
        grams.sort_unstable();
        grams.dedup();
        let terms = grams
            .iter()
            .map(|gram| Term::from_field_text(fourgram_field(fields, gram), gram))
            .collect();
        Long::Contains(terms)
    }

    /// Terms every match holds.
    pub(super) fn terms(&self) -> Vec<Term> {
        match self {
            Long::Phrase(terms) => terms.iter().map(|(_, term)| term.clone()).collect(),
            Long::Contains(terms) => terms.clone(),
        }
    }
}

/// A keyword of five or more characters' key among the kept bitsets: its
/// whole text as a term of the 4-gram field, which holds no longer term.
pub(super) fn long_key(fields: &Fields, keyword: &Keyword) -> Term {
    Term::from_field_text(fields.grams4, keyword.as_str())
}

/// The request's keywords' morphemes, each once, sorted.
pub(super) fn morphemes(request: &Request) -> Vec<String> {
    let mut morphemes: Vec<String> = request
        .keywords
        .iter()
        .flat_map(|k| morph::analyzer().morphemes(k.as_str()))
        .collect();
    morphemes.sort_unstable();
    morphemes.dedup();
    morphemes
}

/// Each morpheme's title and content terms: a row holds the morpheme when
/// it holds either.
pub(super) fn morpheme_fields(fields: &Fields, morphemes: &[String]) -> Vec<[Term; 2]> {
    morphemes
        .iter()
        .map(|m| {
            [
                Term::from_field_text(fields.title_morph, m),
                Term::from_field_text(fields.content_morph, m),
            ]
        })
        .collect()
}

pub(super) fn term_query(field: Field, text: &str, option: IndexRecordOption) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(field, text), option))
}
