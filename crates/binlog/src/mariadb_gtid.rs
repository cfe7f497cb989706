//! MariaDB GTIDs: `domain-server-sequence`, one per replication domain,
//! as `@@gtid_binlog_pos` lists them; and MariaDB's GTID event, which
//! `mysql_common` does not know.
//!
//! MariaDB's GTIDs are not MySQL's: a position is the last GTID applied in
//! each domain (not a set of every transaction seen), a replica asks for it
//! through the session variable `@slave_connect_state`, and the event that
//! opens each event group (type 0xA2) has a layout of its own. `mysql_async`
//! hands that event over as an unknown event with its raw bytes, so it is
//! read here.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// MariaDB's GTID event, which opens every event group (a transaction, or a
/// statement such as DDL) in the log.
pub(crate) const GTID_EVENT: u8 = 0xA2;

/// The group is one statement with no `XID` or `COMMIT` of its own (DDL).
pub(crate) const FL_STANDALONE: u8 = 0x01;

/// One MariaDB GTID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MariaDbGtid {
    pub domain: u32,
    pub server_id: u32,
    pub sequence: u64,
}

impl fmt::Display for MariaDbGtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server_id, self.sequence)
    }
}

/// The body of a GTID event: its GTID and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GtidEvent {
    pub(crate) gtid: MariaDbGtid,
    pub(crate) flags: u8,
}

impl GtidEvent {
    /// Reads the event body (after the common header, without checksum):
    /// sequence number (u64 LE), domain id (u32 LE), flags (u8), then
    /// fields this reader does not need. The server id is the one in the
    /// event's common header: MariaDB writes the GTID's there.
    pub(crate) fn parse(header_server_id: u32, body: &[u8]) -> Option<GtidEvent> {
        let sequence = u64::from_le_bytes(body.get(0..8)?.try_into().ok()?);
        let domain = u32::from_le_bytes(body.get(8..12)?.try_into().ok()?);
        let flags = *body.get(12)?;
        Some(GtidEvent {
            gtid: MariaDbGtid {
                domain,
                server_id: header_server_id,
                sequence,
            },
            flags,
        })
    }

    /// Whether the group is a single statement, ended by that statement
    /// rather than by an `XID` or `COMMIT`.
    pub(crate) fn standalone(&self) -> bool {
        self.flags & FL_STANDALONE != 0
    }
}

/// A MariaDB GTID position: the last GTID of each domain, `0-1-42,1-2-7`.
/// Empty means the start of the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MariaDbGtids {
    by_domain: BTreeMap<u32, MariaDbGtid>,
}

impl MariaDbGtids {
    pub fn is_empty(&self) -> bool {
        self.by_domain.is_empty()
    }

    /// Records `gtid` as its domain's last.
    pub fn set(&mut self, gtid: MariaDbGtid) {
        self.by_domain.insert(gtid.domain, gtid);
    }

    pub fn iter(&self) -> impl Iterator<Item = &MariaDbGtid> {
        self.by_domain.values()
    }
}

impl fmt::Display for MariaDbGtids {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for gtid in self.by_domain.values() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{gtid}")?;
        }
        Ok(())
    }
}

/// A MariaDB GTID position that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadMariaDbGtids(pub String);

impl fmt::Display for BadMariaDbGtids {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a MariaDB GTID position: {}", self.0)
    }
}

impl std::error::Error for BadMariaDbGtids {}

impl FromStr for MariaDbGtids {
    type Err = BadMariaDbGtids;

    fn from_str(text: &str) -> Result<MariaDbGtids, BadMariaDbGtids> {
        let mut gtids = MariaDbGtids::default();
        for item in text.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let parts: Vec<&str> = item.split('-').collect();
            let [domain, server_id, sequence] = parts[..] else {
                return Err(BadMariaDbGtids(format!(
                    "{item:?} is not domain-server-sequence"
                )));
            };
            let (Ok(domain), Ok(server_id), Ok(sequence)) = (
                domain.parse::<u32>(),
                server_id.parse::<u32>(),
                sequence.parse::<u64>(),
            ) else {
                return Err(BadMariaDbGtids(format!("{item:?} is not three numbers")));
            };
            if gtids.by_domain.contains_key(&domain) {
                return Err(BadMariaDbGtids(format!("domain {domain} is listed twice")));
            }
            gtids.set(MariaDbGtid {
                domain,
                server_id,
                sequence,
            });
        }
        Ok(gtids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_round_trips_sorted_by_domain() {
        let gtids: MariaDbGtids = "1-2-7, 0-1-42".parse().unwrap();
        assert_eq!(gtids.to_string(), "0-1-42,1-2-7");
        assert_eq!("".parse::<MariaDbGtids>().unwrap(), MariaDbGtids::default());
    }

    #[test]
    fn a_commit_replaces_its_domain_only() {
        let mut gtids: MariaDbGtids = "0-1-42,1-2-7".parse().unwrap();
        gtids.set(MariaDbGtid {
            domain: 0,
            server_id: 3,
            sequence: 43,
        });
        assert_eq!(gtids.to_string(), "0-3-43,1-2-7");
    }

    #[test]
    fn rejects_what_is_not_a_position() {
        for text in ["0-1", "a-b-c", "0-1-2-3", "0-1-2,0-1-3"] {
            assert!(text.parse::<MariaDbGtids>().is_err(), "{text}");
        }
    }

    #[test]
    fn reads_the_event_body() {
        // sequence 0x0102 = 258, domain 5, flags: standalone | ddl
        let mut body = Vec::new();
        body.extend_from_slice(&258u64.to_le_bytes());
        body.extend_from_slice(&5u32.to_le_bytes());
        body.push(0x21);
        body.extend_from_slice(&[0; 6]);
        let event = GtidEvent::parse(9, &body).unwrap();
        assert_eq!(event.gtid.to_string(), "5-9-258");
        assert!(event.standalone());
        assert!(GtidEvent::parse(9, &body[..12]).is_none());
    }
}
