//! Which attributes of each source the writer puts in columns: numbers for
//! ranges and attribute orders, text for facets (see `attributes`). Read by
//! the writer, by patches and by searches alike, so it depends on nothing
//! but the schema.

use tantivy::schema::OwnedValue;
use tantivy::TantivyDocument;

use chaja_core::model::Doc;
use chaja_core::sources::{SourceId, Sources};

use crate::schema::Fields;

/// Which attributes of each source are written as numbers and as facets.
#[derive(Debug, Clone, Default)]
pub struct AttrLayout {
    numeric: Vec<Vec<String>>,
    facets: Vec<Vec<String>>,
}

impl AttrLayout {
    pub fn of(sources: &Sources) -> AttrLayout {
        AttrLayout {
            numeric: sources.iter().map(|s| s.numeric.clone()).collect(),
            facets: sources.iter().map(|s| s.facets.clone()).collect(),
        }
    }

    pub(crate) fn numeric(&self, source: SourceId) -> &[String] {
        self.numeric.get(source.index()).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn facets(&self, source: SourceId) -> &[String] {
        self.facets.get(source.index()).map_or(&[], Vec::as_slice)
    }

    /// Every name some source declares numeric, once.
    pub(crate) fn all_numeric(&self) -> std::collections::BTreeSet<&str> {
        self.numeric.iter().flatten().map(String::as_str).collect()
    }

    /// Every name some source declares a facet, once.
    pub(crate) fn all_facets(&self) -> std::collections::BTreeSet<&str> {
        self.facets.iter().flatten().map(String::as_str).collect()
    }

    /// Adds the row's declared numbers and facet values to its document.
    pub(crate) fn add_columns(&self, fields: &Fields, doc: &Doc, d: &mut TantivyDocument) {
        let value_of = |name: &str| doc.attributes.iter().find(|(n, _)| n == name).map(|a| &a.1);
        let numbers: std::collections::BTreeMap<String, OwnedValue> = self
            .numeric(doc.source)
            .iter()
            .filter_map(|name| {
                let number = value_of(name)?.number()?;
                Some((name.clone(), OwnedValue::F64(number)))
            })
            .collect();
        if !numbers.is_empty() {
            d.add_object(fields.numbers, numbers);
        }
        let facets: std::collections::BTreeMap<String, OwnedValue> = self
            .facets(doc.source)
            .iter()
            .filter_map(|name| {
                let text = value_of(name)?.filter_text()?;
                Some((name.clone(), OwnedValue::Str(text)))
            })
            .collect();
        if !facets.is_empty() {
            d.add_object(fields.facets, facets);
        }
    }
}
