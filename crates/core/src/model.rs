//! The rows chaja mirrors, as the indexer and the search see them: a
//! source's row reduced to its key, its time, its text and its attributes.

use crate::sources::SourceId;

/// A row's key: the value of its source's `id` column.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    Int(i64),
    Str(String),
}

impl Key {
    /// The key as the outbox triggers write it (`CAST(id AS CHAR)`): the
    /// form deletes and lookups go by.
    pub fn text(&self) -> String {
        match self {
            Key::Int(i) => i.to_string(),
            Key::Str(s) => s.clone(),
        }
    }
}

/// A stored attribute's value, as the database typed it.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Null,
    Int(i64),
    Str(String),
}

impl AttrValue {
    /// The text an `attr.<name>=<value>` filter compares with; none for NULL.
    pub fn filter_text(&self) -> Option<String> {
        match self {
            AttrValue::Null => None,
            AttrValue::Int(i) => Some(i.to_string()),
            AttrValue::Str(s) => Some(s.clone()),
        }
    }

    /// The value as a number, for an attribute declared numeric: an
    /// integer, or text that reads as a finite decimal (a `DECIMAL` column
    /// arrives as text). `None` for NULL and for text that is no number.
    pub fn number(&self) -> Option<f64> {
        match self {
            AttrValue::Null => None,
            AttrValue::Int(i) => Some(*i as f64),
            AttrValue::Str(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            AttrValue::Null => serde_json::Value::Null,
            AttrValue::Int(i) => (*i).into(),
            AttrValue::Str(s) => s.as_str().into(),
        }
    }
}

/// A searchable row of some source, as the indexer reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub source: SourceId,
    pub key: Key,
    /// The first text field, for sources with two or more.
    pub title: Option<String>,
    /// The other text fields that are not NULL, in the configured order.
    pub body: Vec<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// The configured attributes, in order.
    pub attributes: Vec<(String, AttrValue)>,
}

impl Doc {
    /// A fingerprint of everything the index keeps of the row: `verify`
    /// compares content, since a plain SQL update by another program need
    /// not touch any `updated_at`.
    pub fn digest(&self) -> u64 {
        let mut h = self.text_hasher();
        for (name, value) in &self.attributes {
            part(&mut h, name.as_bytes());
            part(&mut h, value.to_json().to_string().as_bytes());
        }
        finish(&h)
    }

    /// The same fingerprint without the attributes: two versions of a row
    /// with equal text digests differ in attributes only, which the index
    /// applies without analyzing the text again.
    pub fn text_digest(&self) -> u64 {
        finish(&self.text_hasher())
    }

    fn text_hasher(&self) -> blake3::Hasher {
        let mut h = blake3::Hasher::new();
        part(
            &mut h,
            self.title.as_deref().unwrap_or("\u{0}none").as_bytes(),
        );
        for text in &self.body {
            part(&mut h, text.as_bytes());
        }
        part(&mut h, &self.created_at.to_le_bytes());
        part(&mut h, self.key.text().as_bytes());
        h
    }
}

/// Hashes `bytes` with its length in front, so that no two splits of the
/// same bytes into parts hash alike.
fn part(h: &mut blake3::Hasher, bytes: &[u8]) {
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

fn finish(h: &blake3::Hasher) -> u64 {
    let bytes = h.finalize();
    u64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// RFC 3339 in UTC, as the API shows timestamps.
pub fn rfc3339(ms: i64) -> String {
    // Always three fraction digits, as JavaScript's `toISOString` writes
    // them, so that the strings sort the way the times do: trimmed, 230 ms
    // is `…39.23Z`, which sorts after `…39.231Z`.
    const FORMAT: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(FORMAT).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_have_three_fraction_digits_and_sort_as_strings() {
        assert_eq!(
            super::rfc3339(1_764_553_179_230),
            "2025-12-01T01:39:39.230Z"
        );
        assert_eq!(
            super::rfc3339(1_764_553_179_000),
            "2025-12-01T01:39:39.000Z"
        );
        let times = [1_764_553_179_230, 1_764_553_179_231, 1_764_553_179_300];
        let strings: Vec<String> = times.iter().map(|&t| super::rfc3339(t)).collect();
        let mut sorted = strings.clone();
        sorted.sort();
        assert_eq!(strings, sorted);
    }
}
