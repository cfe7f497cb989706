//! A hit's stored fields, read from the bytes of its stored document.
//!
//! tantivy reads a stored document into owned values: a text's UTF-8 is
//! checked by the standard library's validator, one character at a time
//! for Korean, and a bytes value is copied one byte at a time. For the
//! ~4 KB body of each of ten hits, that was a tenth of the server's time
//! under never-seen queries at 1M rows. So a hit reads the document's
//! bytes from the doc store (`StoreReader::get_document_bytes`, the block
//! already decompressed and cached) and takes its four stored fields as
//! slices, checking their UTF-8 with `simdutf8`.
//!
//! Written by hand because tantivy offers no borrowed reader for a stored
//! document. The format is tantivy's (`schema::document::se`): the number
//! of values, then each value as its field (`u32`), a type code, and for
//! text and bytes a `VInt` length and the bytes. Every stored field of
//! this schema is text or bytes (see `schema`); anything else is refused,
//! and a test reads every field both ways.

use tantivy::schema::Field;
use tantivy_common::{BinarySerializable, VInt};

use crate::schema::Fields;
use crate::{IndexError, Result};

/// tantivy's type codes of the two kinds of value this schema stores.
const TEXT_CODE: u8 = 0;
const BYTES_CODE: u8 = 4;

/// How many decompressed blocks each segment's store reader keeps, as
/// tantivy's own searcher does: the ten hits of a newest-first page are
/// neighbours in a segment, so they share a few blocks.
pub(crate) const CACHED_BLOCKS: usize = 100;

/// The stored fields a hit shows, borrowed from the document's bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Stored<'a> {
    pub(crate) key: Option<&'a str>,
    pub(crate) attributes: Option<&'a str>,
    pub(crate) title: Option<&'a str>,
    /// The body fields, joined by `BODY_SEPARATOR`.
    pub(crate) content: Option<&'a str>,
}

/// Reads the stored fields of one serialized document (see the module
/// doc). The first value of each field is kept, as `get_first` would.
pub(crate) fn read<'a>(mut bytes: &'a [u8], fields: &Fields) -> Result<Stored<'a>> {
    let bad = |what: &str| IndexError::invalid(format!("a stored document is malformed: {what}"));
    let values = VInt::deserialize(&mut bytes)
        .map_err(|_| bad("no value count"))?
        .val();
    let mut stored = Stored::default();
    for _ in 0..values {
        let field = u32::deserialize(&mut bytes)
            .map(Field::from_field_id)
            .map_err(|_| bad("a value without its field"))?;
        let (&code, rest) = bytes.split_first().ok_or_else(|| bad("no type code"))?;
        if code != TEXT_CODE && code != BYTES_CODE {
            return Err(bad(&format!("type code {code} in field {field:?}")));
        }
        bytes = rest;
        let len = VInt::deserialize(&mut bytes)
            .map_err(|_| bad("no length"))?
            .val();
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= bytes.len())
            .ok_or_else(|| bad("a value longer than the document"))?;
        let (value, rest) = bytes.split_at(len);
        bytes = rest;
        let slot = match field {
            f if f == fields.key => &mut stored.key,
            f if f == fields.attributes => &mut stored.attributes,
            f if f == fields.title => &mut stored.title,
            f if f == fields.content => &mut stored.content,
            _ => continue,
        };
        if slot.is_none() {
            let text =
                simdutf8::basic::from_utf8(value).map_err(|_| bad("a value is not UTF-8"))?;
            *slot = Some(text);
        }
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use chaja_core::model::{AttrValue, Doc, Key};
    use chaja_core::sources::SourceId;
    use tantivy::schema::Value;
    use tantivy::TantivyDocument;

    use super::*;
    use crate::create_generation;

    /// Every stored field of every document, read from its bytes, is what
    /// tantivy's own reader finds: titles or none, one body or several,
    /// attributes, and text beyond Hangul.
    #[test]
    fn stored_fields_read_from_the_bytes_are_tantivys() {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer(16 << 20).unwrap();
        let bodies = [
            "본문 가나다 😀 Ǆ ﬃ café",
            &"긴 본문입니다. ".repeat(400),
            "",
        ];
        for i in 0..30i64 {
            let doc = Doc {
                source: SourceId::from_index((i % 2) as usize),
                key: if i % 3 == 0 {
                    Key::Str(format!("키-{i}"))
                } else {
                    Key::Int(i)
                },
                title: (i % 4 != 0).then(|| format!("제목 {i} <b>")),
                body: (0..=(i % 3) as usize)
                    .map(|b| bodies[(i as usize + b) % bodies.len()].to_owned())
                    .collect(),
                created_at: i,
                attributes: vec![("rating".to_owned(), AttrValue::Int(i % 5))],
            };
            writer.upsert(&doc).unwrap();
        }
        writer.commit(1).unwrap();
        generation.reload().unwrap();
        let searcher = generation.reader.searcher();
        let fields = &generation.fields;
        let mut read_docs = 0;
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let store = segment.get_store_reader(CACHED_BLOCKS).unwrap();
            for doc_id in segment.doc_ids_alive() {
                let bytes = store.get_document_bytes(doc_id).unwrap();
                let got = read(&bytes, fields).unwrap();
                let want: TantivyDocument = searcher
                    .doc(tantivy::DocAddress::new(ord as u32, doc_id))
                    .unwrap();
                let text = |field| want.get_first(field).and_then(|v| v.as_str());
                let content = want
                    .get_first(fields.content)
                    .and_then(|v| v.as_bytes())
                    .map(|b| std::str::from_utf8(b).unwrap());
                assert_eq!(
                    got,
                    Stored {
                        key: text(fields.key),
                        attributes: text(fields.attributes),
                        title: text(fields.title),
                        content,
                    }
                );
                assert!(got.key.is_some() && got.content.is_some());
                read_docs += 1;
            }
        }
        assert_eq!(read_docs, 30);
    }

    /// Cut or corrupted bytes are an error, not a panic or a wrong field.
    #[test]
    fn malformed_documents_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let fields = &generation.fields;
        let mut good = vec![0x80 | 1];
        good.extend_from_slice(&fields.title.field_id().to_le_bytes());
        good.push(TEXT_CODE);
        good.push(0x80 | 3);
        good.extend_from_slice("가".as_bytes());
        assert_eq!(read(&good, fields).unwrap().title, Some("가"));
        for cut in 0..good.len() {
            assert!(read(&good[..cut], fields).is_err(), "cut at {cut}");
        }
        let mut not_utf8 = good.clone();
        *not_utf8.last_mut().unwrap() = 0xFF;
        assert!(read(&not_utf8, fields).is_err());
        let mut other_type = good.clone();
        other_type[5] = 1; // a u64
        assert!(read(&other_type, fields).is_err());
    }
}
