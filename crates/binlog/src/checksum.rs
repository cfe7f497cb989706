//! The file name of the first rotate event of a dump.
//!
//! A dump starts with an artificial rotate event that names the file
//! being read, sent before the format description event that says
//! whether events end in a 4-byte CRC32. `mysql_common` cannot know yet,
//! so it leaves the checksum on the end of the file name. The bytes are
//! dropped here only when they are that event's CRC32, so a server that
//! sends no checksum keeps its full name.

/// `name` without a trailing CRC32 of the event it came in. `header` is
/// the event's 19-byte common header, `data` the rest of the event as it
/// came (the name ends it).
pub(crate) fn without_checksum(header: &[u8; 19], data: &[u8], name: &[u8]) -> Vec<u8> {
    if name.len() < 4 || data.len() < 4 || !data.ends_with(name) {
        return name.to_vec();
    }
    let (body, tail) = data.split_at(data.len() - 4);
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(header);
    hasher.update(body);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if hasher.finalize() != stored {
        return name.to_vec();
    }
    name[..name.len() - 4].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &[u8], with_checksum: bool) -> ([u8; 19], Vec<u8>) {
        let mut header = [0u8; 19];
        header[4] = 4; // ROTATE_EVENT
        let mut data = 4u64.to_le_bytes().to_vec();
        data.extend_from_slice(name);
        if with_checksum {
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(&header);
            hasher.update(&data);
            data.extend_from_slice(&hasher.finalize().to_le_bytes());
        }
        (header, data)
    }

    #[test]
    fn drops_only_a_true_checksum() {
        let (header, data) = event(b"binlog-bin.000001", true);
        assert_eq!(
            without_checksum(&header, &data, &data[8..]),
            b"binlog-bin.000001"
        );
        let (header, data) = event(b"binlog-bin.000001", false);
        assert_eq!(
            without_checksum(&header, &data, &data[8..]),
            b"binlog-bin.000001"
        );
    }
}
