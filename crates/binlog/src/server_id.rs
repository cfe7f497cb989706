//! A default `server_id` for a reader.
//!
//! A replica registers with a `server_id` that no other replica of the
//! same server uses: a second dump with the same id makes the server drop
//! the first. Each chaja instance has its own index directory, so an id
//! derived from that path is stable across restarts and differs between
//! instances. Servers and their replicas are usually numbered from 1 up,
//! so the id is taken from far above them.

/// The lowest id handed out.
pub const DERIVED_MIN: u32 = 1_000_000;
/// One past the highest id handed out.
pub const DERIVED_END: u32 = 4_000_000_000;

/// A stable `server_id` for `seed` (the index directory's path), in
/// `DERIVED_MIN..DERIVED_END`. FNV-1a, written out so that the id does not
/// change with a Rust release (std's hasher makes no such promise).
pub fn derive_server_id(seed: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in seed.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let span = u64::from(DERIVED_END - DERIVED_MIN);
    DERIVED_MIN + (hash % span) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_in_range_and_spread() {
        // Fixed: a change here would make every deployed reader a new replica.
        assert_eq!(
            derive_server_id("/var/lib/chaja/index"),
            derive_server_id("/var/lib/chaja/index")
        );
        let ids: Vec<u32> = (0..1000)
            .map(|i| derive_server_id(&format!("/srv/chaja-{i}/index")))
            .collect();
        for id in &ids {
            assert!((DERIVED_MIN..DERIVED_END).contains(id));
        }
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ids.len());
    }

    #[test]
    fn known_value() {
        // FNV-1a 64 of "" is the offset basis itself.
        assert_eq!(
            derive_server_id(""),
            DERIVED_MIN + (0xcbf2_9ce4_8422_2325u64 % 3_999_000_000) as u32
        );
    }
}
