//! Cursors: the rank of the last hit served, bound to its query and to
//! the view it was ranked on.
//!
//! A cursor is `base64(version, json).base64(mac)`, the MAC a keyed BLAKE3
//! hash (the key is the deployment's cursor secret). It is opaque to
//! clients, and a changed byte, another query's cursor or a time no query
//! ran at is refused rather than answered with a silently different page.
//! It names the point in time its walk reads (see `snapshots`), so the
//! next page ranks rows as the first one did.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use chaja_index::search::{Rank, Request, SearchKey};

use crate::snapshots::SnapshotId;

/// Why a cursor is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("cursor is malformed or was changed")]
    Invalid,
    #[error("cursor belongs to another query, sort or filter")]
    OtherQuery,
}

#[derive(Serialize, Deserialize)]
struct CursorBody {
    /// The rank of the last hit served.
    r: Rank,
    /// The query it belongs to.
    f: String,
    /// The query's reference time (`Request::now`).
    t: i64,
    /// The point in time the walk reads.
    p: u64,
}

/// The first byte of every cursor body: a later format gets another, and
/// an older server answers its cursors with a 400, not a wrong page.
const CURSOR_VERSION: u8 = 3;

/// Where a walk goes on: after `after`, ranked at `now`, on the view
/// `snapshot` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub after: Rank,
    pub now: i64,
    pub snapshot: SnapshotId,
}

/// `base64(version, json).base64(mac)`: opaque to clients, and a changed
/// byte is a 400 rather than a silently different page.
pub fn encode(rank: Rank, request: &Request, snapshot: SnapshotId, key: &[u8; 32]) -> String {
    let mut body = vec![CURSOR_VERSION];
    serde_json::to_writer(
        &mut body,
        &CursorBody {
            r: rank,
            f: SearchKey::query(request).as_str().to_owned(),
            t: request.now,
            p: snapshot.0,
        },
    )
    .expect("cursor serializes");
    let mac = blake3::keyed_hash(key, &body);
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&body),
        URL_SAFE_NO_PAD.encode(&mac.as_bytes()[..16])
    )
}

/// The rank the next page starts after, the query's reference time
/// (`Request::now`), so that the recency factor of every page is the same,
/// and the view the walk reads.
pub fn decode(token: &str, request: &Request, key: &[u8; 32]) -> Result<Cursor, CursorError> {
    let invalid = || CursorError::Invalid;
    let (body, mac) = token.split_once('.').ok_or_else(invalid)?;
    let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| invalid())?;
    let mac = URL_SAFE_NO_PAD.decode(mac).map_err(|_| invalid())?;
    let expected = blake3::keyed_hash(key, &body);
    if !constant_time_eq::constant_time_eq(&expected.as_bytes()[..16], &mac) {
        return Err(invalid());
    }
    let Some((&CURSOR_VERSION, body)) = body.split_first() else {
        return Err(invalid());
    };
    let cursor: CursorBody = serde_json::from_slice(body).map_err(|_| invalid())?;
    if cursor.f != SearchKey::query(request).as_str() {
        return Err(CursorError::OtherQuery);
    }
    // A reference time from the future or before the epoch is no time a
    // query of ours ran at, even under a valid MAC.
    let now = cursor.t;
    if !(0..=request.now.saturating_add(86_400_000)).contains(&now) {
        return Err(invalid());
    }
    Ok(Cursor {
        after: cursor.r,
        now,
        snapshot: SnapshotId(cursor.p),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chaja_core::text::parse_query;

    fn request(q: &str) -> Request {
        Request::newest_first(parse_query(q), 10)
    }

    #[test]
    fn cursors_round_trip_and_reject_changes() {
        let key = [7; 32];
        let r = request("스프링");
        let token = encode((0, 123, 456, 7), &r, SnapshotId(9), &key);
        let want = Cursor {
            after: (0, 123, 456, 7),
            now: r.now,
            snapshot: SnapshotId(9),
        };
        assert_eq!(decode(&token, &r, &key).unwrap(), want);
        // Another query, another key, a flipped character, garbage.
        assert_eq!(
            decode(&token, &request("부트"), &key),
            Err(CursorError::OtherQuery)
        );
        assert!(decode(&token, &r, &[8; 32]).is_err());
        let mut flipped = token.clone().into_bytes();
        flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
        assert!(decode(&String::from_utf8(flipped).unwrap(), &r, &key).is_err());
        assert!(decode("not-a-cursor", &r, &key).is_err());
    }

    /// Whoever holds the key can sign anything; a reference time no query
    /// could have had is still refused, not an overflow in the recency
    /// factor.
    #[test]
    fn cursors_with_impossible_times_are_refused() {
        let key = [7; 32];
        let mut r = request("스프링");
        for forged in [i64::MIN, -1, r.now + 2 * 86_400_000, i64::MAX] {
            let mut at = r.clone();
            at.now = forged;
            let token = encode((0, 123, 456, 7), &at, SnapshotId(1), &key);
            assert!(decode(&token, &r, &key).is_err(), "{forged}");
        }
        // A cursor of another format version.
        r.now = 1;
        let token = encode((0, 1, 2, 3), &r, SnapshotId(1), &key);
        let (body, _) = token.split_once('.').unwrap();
        let mut raw = URL_SAFE_NO_PAD.decode(body).unwrap();
        raw[0] = 2;
        let body = URL_SAFE_NO_PAD.encode(&raw);
        let mac = URL_SAFE_NO_PAD.encode(&blake3::keyed_hash(&key, &raw).as_bytes()[..16]);
        assert!(decode(&format!("{body}.{mac}"), &r, &key).is_err());
    }
}
