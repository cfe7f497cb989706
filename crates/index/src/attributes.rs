//! The attribute store: each document's declared attributes as columns,
//! what ranges, sorting and facets read.
//!
//! Every attribute is stored with its hit (`attributes`, JSON) and matched
//! by `attr.<name>=<value>` (`attrs`, one term per value). Those two cannot
//! answer "likes ≥ 10", "most liked first" or "how many ★5": a posting
//! list per value has no order, and reading the stored JSON of every match
//! costs a decompression each. So the attributes a source declares
//! `numeric` (or `sortable`) are also written as numbers, and its `facets`
//! as text, into two columnar (fast) JSON fields, one column per name:
//!
//! - `numbers.<name>`: an `f64` per document, for `attr.<name>.gte/lte`
//!   and `sort=attr.<name>.asc|desc`;
//! - `facets.<name>`: the value as the database shows it (`"4"`, never
//!   `"4.0"`), whose per-segment term ordinals the facet count adds up.
//!
//! A JSON field per kind, rather than a field per attribute, keeps the
//! schema the same for every configuration, so the schema check that tells
//! an operator to reindex still means "another version of chaja". A
//! column is read through its name; a segment without any value for it
//! has no column, which reads as "missing" for every document.
//!
//! A value declared numeric that does not read as a number is indexed as
//! missing (the loader logs it with the row's key): it matches no range
//! and sorts last, as `NULL` does.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;
use tantivy::{DocId, SegmentReader};

use crate::attr_layout::AttrLayout;
use crate::patches::{Patch, SegmentPatches};
use crate::schema::{FACETS, NUMBERS};

/// `attr.<name>.gte` and `attr.<name>.lte`: inclusive bounds on a numeric
/// attribute. A row without a number there does not match.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberRange {
    pub name: String,
    pub gte: Option<f64>,
    pub lte: Option<f64>,
}

impl NumberRange {
    fn contains(&self, value: f64) -> bool {
        self.gte.is_none_or(|lo| value >= lo) && self.lte.is_none_or(|hi| value <= hi)
    }
}

/// `sort=attr.<name>.desc|asc`: by a sortable attribute, ties newest first;
/// rows without a number come last either way.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttrOrder {
    pub name: String,
    pub descending: bool,
}

impl AttrOrder {
    /// The first part of a hit's rank (larger first): the number in an
    /// order-preserving integer form, flipped for ascending; `i64::MIN`,
    /// below every number either way, for a row without one.
    pub(crate) fn rank_part(&self, value: Option<f64>) -> i64 {
        let Some(value) = value else {
            return i64::MIN;
        };
        // IEEE 754 bits order like the numbers for positives; negatives
        // order backwards, so their magnitude bits are flipped. A finite
        // value never maps to i64::MAX, so `!` below never gives i64::MIN.
        // -0.0 equals 0.0, so it ranks alike.
        let value = if value == 0.0 { 0.0 } else { value };
        let bits = value.to_bits() as i64;
        let ordered = if bits < 0 { bits ^ i64::MAX } else { bits };
        if self.descending {
            ordered
        } else {
            !ordered
        }
    }
}

/// A facet's counts over a whole matched set: the top values by count
/// (ties by value), and how many distinct values there were.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FacetCounts {
    pub name: String,
    pub values: Vec<(String, u64)>,
    pub distinct: u64,
}

/// One segment's counts by value text for each requested facet, in
/// request order: what the per-segment facet cache keeps.
pub type SegmentFacetValues = Vec<Vec<(String, u64)>>;

/// Each segment's attribute columns as plain arrays, one value per
/// document:
/// - facet ordinals, for columns of fewer than 65,535 values, with the
///   column's number of values standing for none (so that the counts
///   array has a slot for it and the count is one indexed add);
/// - numbers (`NaN` for none).
///
/// A column lookup per match (an optional column ranks the document
/// first) cost a frequent keyword's facet about twice its plain count; an
/// array read is what counting by source already does (`doc_sources`).
/// Segments never change, so an array is built once per segment: when the
/// reader first sees the segment (see `Generation::reload`), so that no
/// query pays for it, or by the first query that needs it before that. An
/// array is dropped when its segment is merged away; each cache is
/// weighed by bytes.
pub struct AttrArrays {
    ords: moka::sync::Cache<(SegmentId, String), Arc<[u16]>>,
    numbers: moka::sync::Cache<(SegmentId, String), Arc<[f64]>>,
}

impl AttrArrays {
    /// Caches of at most `bytes` each.
    pub(crate) fn new(bytes: u64) -> AttrArrays {
        AttrArrays {
            ords: moka::sync::Cache::builder()
                .weigher(|_, a: &Arc<[u16]>| u32::try_from(a.len() * 2).unwrap_or(u32::MAX))
                .max_capacity(bytes)
                .build(),
            numbers: moka::sync::Cache::builder()
                .weigher(|_, a: &Arc<[f64]>| u32::try_from(a.len() * 8).unwrap_or(u32::MAX))
                .max_capacity(bytes)
                .build(),
        }
    }

    /// Builds `segment`'s arrays of every attribute `layout` declares
    /// numeric or a facet, unless they exist. Blocking: a pass over each
    /// column.
    pub(crate) fn prime(
        &self,
        segment: &SegmentReader,
        layout: &AttrLayout,
    ) -> tantivy::Result<()> {
        for name in layout.all_numeric() {
            self.numbers(segment, name)?;
        }
        for name in layout.all_facets() {
            self.facet(segment, name)?;
        }
        Ok(())
    }

    /// Drops the arrays of segments not in `live`: merged away.
    pub(crate) fn retain(&self, live: &HashSet<SegmentId>) {
        drop_merged(&self.ords, live, |key| key.0);
        drop_merged(&self.numbers, live, |key| key.0);
    }

    /// How many (ordinal, number) arrays are kept.
    #[cfg(test)]
    pub(crate) fn segments(&self) -> (usize, usize) {
        (self.ords.iter().count(), self.numbers.iter().count())
    }

    /// `name`'s column in `segment`, ready to count: by its ordinals by
    /// document when it has fewer than 65,535 values; `None` when no
    /// document there has a value.
    fn facet(&self, segment: &SegmentReader, name: &str) -> tantivy::Result<Option<FacetColumn>> {
        let Some(column) = segment.fast_fields().str(&format!("{FACETS}.{name}"))? else {
            return Ok(None);
        };
        let terms = match u16::try_from(column.num_terms()) {
            Ok(terms) if terms < u16::MAX => terms,
            _ => {
                return Ok(Some(FacetColumn::Sparse {
                    column,
                    counts: HashMap::new(),
                }))
            }
        };
        let column_ords = column.ords();
        let ords = self
            .ords
            .get_with((segment.segment_id(), name.to_owned()), || {
                blocks(
                    segment.max_doc(),
                    |docs, values| column_ords.first_vals(docs, values),
                    terms,
                    |o| o as u16,
                )
            });
        Ok(Some(FacetColumn::Dense {
            counts: vec![0; usize::from(terms) + 1],
            column,
            ords,
        }))
    }

    /// `name`'s numbers in `segment`; `None` when no document there has one.
    fn numbers(&self, segment: &SegmentReader, name: &str) -> tantivy::Result<Option<Arc<[f64]>>> {
        let Some(column) = segment
            .fast_fields()
            .column_opt::<f64>(&format!("{NUMBERS}.{name}"))?
        else {
            return Ok(None);
        };
        let max_doc = segment.max_doc();
        let array = self
            .numbers
            .get_with((segment.segment_id(), name.to_owned()), || {
                blocks(
                    max_doc,
                    |docs, values| column.first_vals(docs, values),
                    f64::NAN,
                    |v| v,
                )
            });
        Ok(Some(array))
    }
}

/// Drops the entries of `cache` whose segment (`segment_of` its key) is
/// not in `live`: merged away.
pub(crate) fn drop_merged<K, V>(
    cache: &moka::sync::Cache<K, V>,
    live: &HashSet<SegmentId>,
    segment_of: impl Fn(&K) -> SegmentId,
) where
    K: std::hash::Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    for (key, _) in cache.iter() {
        if !live.contains(&segment_of(&key)) {
            cache.invalidate(&*key);
        }
    }
}

/// Reads a column for every document of a segment in blocks of 4,096:
/// `read` fills the values of a block's documents, `missing` stands for a
/// document without one.
fn blocks<T: Copy, U: Copy>(
    max_doc: DocId,
    read: impl Fn(&[DocId], &mut [Option<T>]),
    missing: U,
    convert: impl Fn(T) -> U,
) -> Arc<[U]> {
    let mut out = Vec::with_capacity(max_doc as usize);
    let mut docs = Vec::with_capacity(4096);
    let mut values: Vec<Option<T>> = vec![None; 4096];
    for start in (0..max_doc).step_by(4096) {
        docs.clear();
        docs.extend(start..max_doc.min(start + 4096));
        let values = &mut values[..docs.len()];
        values.fill(None);
        read(&docs, values);
        out.extend(values.iter().map(|v| v.map_or(missing, &convert)));
    }
    Arc::from(out)
}

/// One facet's column in a segment and the counts so far: by the dense
/// ordinals into an array of the column's size (the common case: facets
/// have few values), or by a lookup per match into a map beyond.
enum FacetColumn {
    Dense {
        column: StrColumn,
        ords: Arc<[u16]>,
        /// By ordinal, and one slot more for the documents without one.
        counts: Vec<u64>,
    },
    Sparse {
        column: StrColumn,
        counts: HashMap<u64, u64>,
    },
}

/// One segment's columns for a request: what its ranges, its order and its
/// facets read per match. A patched document's values are read from its
/// patch instead (see `patches`).
pub(crate) struct SegmentAttrs {
    /// Each range with its column; `None` when the segment has no number
    /// under that name, so nothing in it matches.
    ranges: Vec<(Option<Arc<[f64]>>, NumberRange)>,
    order: Option<(Option<Arc<[f64]>>, AttrOrder)>,
    /// Each requested facet's name and column.
    facets: Vec<(String, Option<FacetColumn>)>,
    /// The segment's patched documents, if any.
    patched: Option<Arc<SegmentPatches>>,
    /// `attr.<name>=<value>` filters, when the segment has patched
    /// documents: their terms matched the documents' old values, so a
    /// patched document is checked here.
    equalities: Vec<(String, String)>,
    /// Facet counts of patched documents, by value, per requested facet.
    patched_counts: Vec<HashMap<String, u64>>,
}

impl SegmentAttrs {
    pub(crate) fn open(
        segment: &SegmentReader,
        request: AttrRequest<'_>,
        arrays: &AttrArrays,
        patched: Option<Arc<SegmentPatches>>,
    ) -> tantivy::Result<SegmentAttrs> {
        let number = |name: &str| arrays.numbers(segment, name);
        let ranges = request
            .ranges
            .iter()
            .map(|r| Ok((number(&r.name)?, r.clone())))
            .collect::<tantivy::Result<_>>()?;
        let order = match request.order {
            Some(o) => Some((number(&o.name)?, o.clone())),
            None => None,
        };
        let facets = request
            .facets
            .iter()
            .map(|name| Ok((name.clone(), arrays.facet(segment, name)?)))
            .collect::<tantivy::Result<_>>()?;
        let equalities = match patched {
            Some(_) => request.equalities.to_vec(),
            None => Vec::new(),
        };
        Ok(SegmentAttrs {
            ranges,
            order,
            facets,
            patched,
            equalities,
            patched_counts: vec![HashMap::new(); request.facets.len()],
        })
    }

    /// Whether this segment's ranges, order, facets or patches read
    /// anything per match: without, the scan keeps its cheaper paths.
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
            && self.order.is_none()
            && self.facets.is_empty()
            && self.equalities.is_empty()
    }

    /// Whether `doc` is patched: its attribute values are its patch's.
    pub(crate) fn is_patched(&self, doc: DocId) -> bool {
        self.patch(doc).is_some()
    }

    pub(crate) fn has_facets(&self) -> bool {
        !self.facets.is_empty()
    }

    #[inline]
    fn patch(&self, doc: DocId) -> Option<&Patch> {
        self.patched.as_ref()?.get(doc)
    }

    /// Whether `doc` is within every range (and, patched, has every
    /// filtered value).
    pub(crate) fn accepts(&self, doc: DocId) -> bool {
        if let Some(patch) = self.patch(doc) {
            return self
                .ranges
                .iter()
                .all(|(_, range)| patch.number(&range.name).is_some_and(|v| range.contains(v)))
                && self
                    .equalities
                    .iter()
                    .all(|(name, value)| patch.has_value(name, value));
        }
        self.ranges.iter().all(|(numbers, range)| {
            numbers.as_ref().is_some_and(|n| {
                let v = n[doc as usize];
                !v.is_nan() && range.contains(v)
            })
        })
    }

    /// The first part of `doc`'s rank under an attribute order.
    pub(crate) fn rank_part(&self, doc: DocId) -> i64 {
        let Some((numbers, order)) = &self.order else {
            return 0;
        };
        let value = match self.patch(doc) {
            Some(patch) => patch.number(&order.name),
            None => numbers
                .as_ref()
                .map(|n| n[doc as usize])
                .filter(|v| !v.is_nan()),
        };
        order.rank_part(value)
    }

    /// Counts `doc`, a match that passed every filter, in each facet.
    #[inline]
    pub(crate) fn count(&mut self, doc: DocId) {
        if let Some(patch) = self.patched.as_deref().and_then(|p| p.get(doc)) {
            for ((name, _), counts) in self.facets.iter().zip(&mut self.patched_counts) {
                if let Some(value) = patch.facet(name) {
                    *counts.entry(value.to_owned()).or_default() += 1;
                }
            }
            return;
        }
        for (_, facet) in &mut self.facets {
            match facet {
                None => {}
                // An ordinal is at most the column's number of values.
                Some(FacetColumn::Dense { ords, counts, .. }) => {
                    counts[usize::from(ords[doc as usize])] += 1
                }
                Some(FacetColumn::Sparse { column, counts }) => {
                    if let Some(ord) = column.ords().first(doc) {
                        *counts.entry(ord).or_default() += 1;
                    }
                }
            }
        }
    }

    /// The segment's facet counts by value text, in request order.
    pub(crate) fn facet_values(&self) -> tantivy::Result<SegmentFacetValues> {
        self.facets
            .iter()
            .zip(&self.patched_counts)
            .map(|((_, facet), patched)| {
                let mut out: Vec<(String, u64)> = Vec::new();
                let counted: Option<(_, Vec<(u64, u64)>)> = match facet {
                    None => None,
                    Some(FacetColumn::Dense { column, counts, .. }) => Some((
                        column,
                        // The last slot is the documents without a value.
                        counts[..counts.len() - 1]
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| **c > 0)
                            .map(|(ord, c)| (ord as u64, *c))
                            .collect(),
                    )),
                    Some(FacetColumn::Sparse { column, counts }) => {
                        Some((column, counts.iter().map(|(o, c)| (*o, *c)).collect()))
                    }
                };
                if let Some((column, counted)) = counted {
                    out.reserve(counted.len());
                    for (ord, count) in counted {
                        let mut text = String::new();
                        if column.ord_to_str(ord, &mut text)? {
                            out.push((text, count));
                        }
                    }
                }
                if !patched.is_empty() {
                    // A value may be both a column's and a patch's.
                    let mut sum: HashMap<String, u64> = out.into_iter().collect();
                    for (value, count) in patched {
                        *sum.entry(value.clone()).or_default() += count;
                    }
                    out = sum.into_iter().collect();
                }
                Ok(out)
            })
            .collect()
    }
}

/// What a request reads of a segment's attributes.
#[derive(Clone, Copy)]
pub(crate) struct AttrRequest<'a> {
    pub(crate) ranges: &'a [NumberRange],
    pub(crate) order: Option<&'a AttrOrder>,
    pub(crate) facets: &'a [String],
    pub(crate) equalities: &'a [(String, String)],
}

/// Adds per-segment facet counts into `sum` (one map per facet).
pub(crate) fn add_facets(sum: &mut [HashMap<String, u64>], more: &[Vec<(String, u64)>]) {
    for (total, values) in sum.iter_mut().zip(more) {
        for (value, count) in values {
            *total.entry(value.clone()).or_default() += count;
        }
    }
}

/// The answer's facets: each one's top `size` values by count (ties by
/// value, so pages and replicas agree), and its number of distinct values.
pub(crate) fn top_facets(
    names: &[String],
    sums: Vec<HashMap<String, u64>>,
    size: usize,
) -> Vec<FacetCounts> {
    names
        .iter()
        .zip(sums)
        .map(|(name, counts)| {
            let distinct = counts.len() as u64;
            let mut values: Vec<(String, u64)> = counts.into_iter().collect();
            values.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            values.truncate(size);
            FacetCounts {
                name: name.clone(),
                values,
                distinct,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_ranks_order_numbers_with_missing_last() {
        let desc = AttrOrder {
            name: "n".into(),
            descending: true,
        };
        let asc = AttrOrder {
            descending: false,
            ..desc.clone()
        };
        let values = [-1e300, -2.5, -0.0, 0.0, 1.0, 4.0, 4.5, 1e300];
        for pair in values.windows(2) {
            assert!(desc.rank_part(Some(pair[0])) <= desc.rank_part(Some(pair[1])));
            assert!(asc.rank_part(Some(pair[0])) >= asc.rank_part(Some(pair[1])));
        }
        for v in values {
            assert!(desc.rank_part(None) < desc.rank_part(Some(v)));
            assert!(asc.rank_part(None) < asc.rank_part(Some(v)));
        }
    }

    #[test]
    fn top_facets_sort_by_count_then_value_and_count_distinct() {
        let counts: HashMap<String, u64> = [("5", 3), ("4", 3), ("1", 1)]
            .into_iter()
            .map(|(v, c)| (v.to_owned(), c))
            .collect();
        let top = top_facets(&["rating".to_owned()], vec![counts], 2);
        assert_eq!(top[0].distinct, 3);
        assert_eq!(
            top[0].values,
            vec![("4".to_owned(), 3), ("5".to_owned(), 3)]
        );
    }
}
