//! MySQL GTID sets (`uuid:1-5:7,uuid2:tag:1-3`), as `@@gtid_executed`
//! prints them and as `COM_BINLOG_DUMP_GTID` takes them.
//!
//! A MySQL server with `gtid_mode=ON` resumes a replica from the set of
//! transactions it has already seen, not from a file and offset, so the
//! set is the position: each commit adds its GTID to it. Tags (MySQL 8.4,
//! `uuid:tag:1-5`) are kept apart from the untagged numbers of the same
//! uuid, as the server counts them apart.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use mysql_async::Sid;

/// A run of transaction numbers, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Interval {
    first: u64,
    last: u64,
}

/// A set of MySQL GTIDs. The empty set is the empty string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GtidSet {
    /// (uuid in lower case, tag in lower case or "") to sorted, disjoint,
    /// non-adjacent intervals.
    groups: BTreeMap<(String, String), Vec<Interval>>,
}

impl GtidSet {
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Adds one transaction, `uuid[:tag]:gno`.
    pub fn add(&mut self, uuid: &str, tag: &str, gno: u64) {
        let key = (uuid.to_ascii_lowercase(), tag.to_ascii_lowercase());
        let intervals = self.groups.entry(key).or_default();
        insert(
            intervals,
            Interval {
                first: gno,
                last: gno,
            },
        );
    }

    /// Whether every transaction of `other` is in this set. A server whose
    /// `@@gtid_purged` is not within a reader's position has purged
    /// transactions the reader has not seen.
    pub fn contains_all(&self, other: &GtidSet) -> bool {
        for (key, wanted) in &other.groups {
            let Some(held) = self.groups.get(key) else {
                return false;
            };
            for interval in wanted {
                let covered = held
                    .iter()
                    .any(|h| h.first <= interval.first && interval.last <= h.last);
                if !covered {
                    return false;
                }
            }
        }
        true
    }

    /// The set as the dump command takes it: one `Sid` per uuid and tag.
    pub(crate) fn to_sids(&self) -> Vec<Sid<'static>> {
        let mut sids = Vec::new();
        for ((uuid, tag), intervals) in &self.groups {
            let mut text = uuid.clone();
            if !tag.is_empty() {
                text.push(':');
                text.push_str(tag);
            }
            for interval in intervals {
                text.push_str(&format!(":{}-{}", interval.first, interval.last));
            }
            // The text was checked when it was parsed or built, so mysql_common
            // reads it back; a failure here would be a bug in this module.
            match Sid::from_str(&text) {
                Ok(sid) => sids.push(sid),
                Err(error) => panic!("GTID set element {text} not accepted: {error}"),
            }
        }
        sids
    }
}

/// Inserts `new` into sorted disjoint intervals, merging neighbours.
fn insert(intervals: &mut Vec<Interval>, new: Interval) {
    let mut merged = new;
    let mut kept = Vec::with_capacity(intervals.len() + 1);
    for interval in intervals.drain(..) {
        // Apart (with a gap of at least one number): keep as it is.
        if interval.last.saturating_add(1) < merged.first
            || merged.last.saturating_add(1) < interval.first
        {
            kept.push(interval);
            continue;
        }
        merged.first = merged.first.min(interval.first);
        merged.last = merged.last.max(interval.last);
    }
    kept.push(merged);
    kept.sort_by_key(|interval| interval.first);
    *intervals = kept;
}

/// A uuid as MySQL prints it: 8-4-4-4-12 hex digits.
pub(crate) fn is_uuid(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    if parts.len() != lengths.len() {
        return false;
    }
    for (part, length) in parts.iter().zip(lengths) {
        if part.len() != length || !part.chars().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
    }
    true
}

/// Formats the 16 bytes of a GTID event's source id as a uuid.
pub(crate) fn uuid_text(bytes: [u8; 16]) -> String {
    let mut text = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// A GTID set that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadGtidSet(pub String);

impl fmt::Display for BadGtidSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a MySQL GTID set: {}", self.0)
    }
}

impl std::error::Error for BadGtidSet {}

impl FromStr for GtidSet {
    type Err = BadGtidSet;

    fn from_str(text: &str) -> Result<GtidSet, BadGtidSet> {
        let mut set = GtidSet::default();
        // `@@gtid_executed` puts a newline after each comma.
        for group in text.split(',') {
            let group = group.trim();
            if group.is_empty() {
                continue;
            }
            let mut parts = group.split(':');
            let uuid = parts.next().unwrap_or_default().trim();
            if !is_uuid(uuid) {
                return Err(BadGtidSet(format!("{uuid:?} is not a uuid")));
            }
            let mut tag = String::new();
            let mut intervals = 0;
            for part in parts {
                let part = part.trim();
                if !part.starts_with(|c: char| c.is_ascii_digit()) {
                    if part.is_empty()
                        || !part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(BadGtidSet(format!("{part:?} is neither a tag nor numbers")));
                    }
                    tag = part.to_ascii_lowercase();
                    continue;
                }
                let (first, last) = match part.split_once('-') {
                    Some((first, last)) => (first, last),
                    None => (part, part),
                };
                let (Ok(first), Ok(last)) = (first.parse::<u64>(), last.parse::<u64>()) else {
                    return Err(BadGtidSet(format!("{part:?} is not a number or a range")));
                };
                if first == 0 || first > last {
                    return Err(BadGtidSet(format!("{part:?} is an empty range")));
                }
                let key = (uuid.to_ascii_lowercase(), tag.clone());
                insert(set.groups.entry(key).or_default(), Interval { first, last });
                intervals += 1;
            }
            if intervals == 0 {
                return Err(BadGtidSet(format!("{group:?} has no transaction numbers")));
            }
        }
        Ok(set)
    }
}

impl fmt::Display for GtidSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Groups are sorted by uuid, then tag, with "" (untagged) first:
        // MySQL's own order within one uuid.
        let mut previous_uuid: Option<&str> = None;
        for ((uuid, tag), intervals) in &self.groups {
            if previous_uuid != Some(uuid.as_str()) {
                if previous_uuid.is_some() {
                    f.write_str(",")?;
                }
                f.write_str(uuid)?;
                previous_uuid = Some(uuid);
            }
            if !tag.is_empty() {
                write!(f, ":{tag}")?;
            }
            for interval in intervals {
                if interval.first == interval.last {
                    write!(f, ":{}", interval.first)?;
                } else {
                    write!(f, ":{}-{}", interval.first, interval.last)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    const B: &str = "4f22ab58-71ca-11e1-9e33-c80aa9429562";

    #[test]
    fn parses_and_prints_as_mysql_does() {
        let text = format!("{A}:1-5:7,\n{B}:1-3");
        let set: GtidSet = text.parse().unwrap();
        assert_eq!(set.to_string(), format!("{A}:1-5:7,{B}:1-3"));
        assert_eq!("".parse::<GtidSet>().unwrap(), GtidSet::default());
    }

    #[test]
    fn uppercase_uuids_are_the_same_source() {
        let set: GtidSet = format!("{}:1-2", A.to_uppercase()).parse().unwrap();
        let mut other = GtidSet::default();
        other.add(A, "", 1);
        other.add(A, "", 2);
        assert_eq!(set, other);
    }

    #[test]
    fn adding_merges_neighbours() {
        let mut set: GtidSet = format!("{A}:1-3:5").parse().unwrap();
        set.add(A, "", 4);
        assert_eq!(set.to_string(), format!("{A}:1-5"));
        set.add(A, "", 9);
        set.add(B, "", 1);
        assert_eq!(set.to_string(), format!("{A}:1-5:9,{B}:1"));
        // Adding what is there changes nothing.
        set.add(A, "", 2);
        assert_eq!(set.to_string(), format!("{A}:1-5:9,{B}:1"));
    }

    #[test]
    fn tags_are_kept_apart() {
        let set: GtidSet = format!("{A}:1-5:etl:1-2").parse().unwrap();
        assert_eq!(set.to_string(), format!("{A}:1-5:etl:1-2"));
        let mut added = GtidSet::default();
        added.add(A, "", 1);
        added.add(A, "etl", 1);
        assert_eq!(added.to_string(), format!("{A}:1:etl:1"));
        assert_eq!(set.to_sids().len(), 2);
    }

    #[test]
    fn containment_is_per_number() {
        let seen: GtidSet = format!("{A}:1-10,{B}:1-3").parse().unwrap();
        let purged: GtidSet = format!("{A}:1-4").parse().unwrap();
        assert!(seen.contains_all(&purged));
        let purged_more: GtidSet = format!("{A}:1-11").parse().unwrap();
        assert!(!seen.contains_all(&purged_more));
        let purged_elsewhere: GtidSet =
            format!("{B}:1-3,{}:1", "5a33bc69-71ca-11e1-9e33-c80aa9429562")
                .parse()
                .unwrap();
        assert!(!seen.contains_all(&purged_elsewhere));
        assert!(seen.contains_all(&GtidSet::default()));
    }

    #[test]
    fn rejects_what_is_not_a_set() {
        for text in [
            "nope:1",
            A,
            &format!("{A}:0-3"),
            &format!("{A}:5-3"),
            &format!("{A}:x-y"),
        ] {
            assert!(text.parse::<GtidSet>().is_err(), "{text}");
        }
    }

    #[test]
    fn sids_round_trip_through_mysql_common() {
        let set: GtidSet = format!("{A}:1-5:7,{B}:2").parse().unwrap();
        let sids = set.to_sids();
        let printed: Vec<String> = sids.iter().map(|sid| sid.to_string()).collect();
        assert_eq!(printed, vec![format!("{A}:1-5:7"), format!("{B}:2")]);
    }

    #[test]
    fn uuid_from_event_bytes() {
        let bytes = [
            0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42,
            0x95, 0x62,
        ];
        assert_eq!(uuid_text(bytes), A);
        assert!(is_uuid(A));
        assert!(!is_uuid("3e11fa47"));
    }
}
