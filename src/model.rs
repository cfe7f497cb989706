//! The rows chaja mirrors, as the indexer and the API see them.

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Question,
    Review,
}

impl Kind {
    /// The `entity_type` the outbox triggers write.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Question => "question",
            Kind::Review => "review",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "question" => Some(Kind::Question),
            "review" => Some(Kind::Review),
            _ => None,
        }
    }

    /// Unique index key of a row; the kind is the low bit so that sorting on
    /// it sorts by id first.
    pub fn uid(self, id: i64) -> u64 {
        ((id as u64) << 1) | self.bit()
    }

    pub fn from_uid(uid: u64) -> (Kind, i64) {
        let kind = if uid & 1 == 0 {
            Kind::Question
        } else {
            Kind::Review
        };
        (kind, (uid >> 1) as i64)
    }

    fn bit(self) -> u64 {
        match self {
            Kind::Question => 0,
            Kind::Review => 1,
        }
    }
}

/// A searchable row: a question, or a review (which has no title).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub kind: Kind,
    pub id: i64,
    pub author_id: i64,
    /// For reviews, the question they belong to.
    pub question_id: Option<i64>,
    pub title: Option<String>,
    pub content: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
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
