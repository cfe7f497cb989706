//! A hit: its stored fields (see `stored`), its title and snippet
//! highlighted.

use tantivy::DocAddress;

use chaja_core::model::Key;
use chaja_core::text::{highlight, lead, Keyword, SNIPPET_CHARS, TITLE_CHARS};

use super::request::{Hit, Rank};
use crate::schema::Fields;
use crate::stored;
use crate::View;
use crate::{parse_key_term, tag_has_string_key, BODY_SEPARATOR};
use crate::{IndexError, Result};

pub(super) fn load_hit(
    view: &View,
    fields: &Fields,
    keywords: &[Keyword],
    rank: Rank,
    address: DocAddress,
) -> Result<Hit> {
    let View {
        searcher,
        patches,
        columns,
        stores,
    } = view;
    let segment = address.segment_ord as usize;
    let columns = &columns[segment];
    // Borrowed from the document's bytes (see `stored`): the title and the
    // body (~4 KB) are only read, to cut the shown title and the snippet.
    let bytes = stores[segment].get_document_bytes(address.doc_id)?;
    let stored = stored::read(&bytes, fields)?;
    let title = stored.title;
    let key_term = stored.key.unwrap_or_default();
    // A patched row's attributes are its patch's (see `patches`).
    let segment_id = searcher.segment_reader(address.segment_ord).segment_id();
    let attributes = match patches.at(segment_id, address.doc_id) {
        Some(patch) => Some(patch.json.clone()),
        None => stored.attributes.map(str::to_owned),
    };
    let content = stored.content.unwrap_or_default();
    // The snippet comes from the first body field that holds a match, or
    // the first one.
    let bodies: Vec<&str> = content.split(BODY_SEPARATOR).collect();
    let snippet = bodies
        .iter()
        .find_map(|body| highlight(body, keywords, SNIPPET_CHARS))
        .unwrap_or_else(|| lead(bodies.first().copied().unwrap_or(""), SNIPPET_CHARS));
    // HTML like the snippet, so that a page can render both the same way:
    // escaped, with the matches in `<em>`.
    let title = title.map(|title| {
        highlight(title, keywords, TITLE_CHARS).unwrap_or_else(|| lead(title, TITLE_CHARS))
    });
    let created_at = columns.created.first(address.doc_id).unwrap_or_default();
    let tag = columns.tag.first(address.doc_id).unwrap_or_default();
    let (source, key_text) = parse_key_term(key_term)
        .ok_or_else(|| IndexError::invalid(format!("bad stored key {key_term:?}")))?;
    let key = match key_text.parse() {
        Ok(i) if !tag_has_string_key(tag) => Key::Int(i),
        _ => Key::Str(key_text.to_owned()),
    };
    Ok(Hit {
        source,
        key,
        attributes,
        title,
        snippet,
        created_at,
        rank,
    })
}
