//! Warming: reading a generation's files into the page cache before the
//! server says it is ready.
//!
//! tantivy reads its files through `mmap`, so after a restart on a cold
//! page cache every first touch of a term dictionary, a posting list or a
//! fast column is a disk read, and a query that touches many of them
//! (a phrase, a relevance query) pays hundreds of milliseconds. Reading
//! the files once, sequentially, costs a few seconds per gigabyte and makes
//! every later touch a memory read. What is read first matters when the
//! page cache cannot hold everything: the dictionaries and fast columns
//! that every query touches, then doc-id postings, then positions, then
//! the stored text (ten hits' worth per query).
//!
//! Reading is bounded by a share of the memory available (and of the
//! cgroup's limit, in a container), so that warming a large index leaves
//! room for the rest of the machine. Within the budget the most-used kinds
//! are read *last*, so that if the page cache still has to evict, it evicts
//! stored text before dictionaries. A shutdown stops the reading.

use std::io::Read;
use std::path::Path;

/// Read in chunks of this size: large enough for the kernel's readahead,
/// small enough to stay out of the allocator's way.
const CHUNK: usize = 1 << 20;

/// Only this share of the memory the kernel reports available is filled.
const MEMORY_SHARE: f64 = 0.5;

/// What one warm-up read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Warmed {
    pub files: u64,
    pub bytes: u64,
    /// Bytes left unread because the budget ran out.
    pub skipped_bytes: u64,
}

/// The order files are read in: what every query touches first.
fn priority(path: &Path) -> u8 {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "term" | "fast" | "fieldnorm" => 0,
        "idx" => 1,
        "pos" => 2,
        "store" => 3,
        _ => 4,
    }
}

/// The budget [`warm`] gets by default: half of `MemAvailable`, or of
/// what the cgroup (v2) still allows when that is less; nothing when the
/// kernel does not say (no `/proc`).
pub fn default_budget() -> u64 {
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    let available = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024);
    let cgroup_file = |name: &str| {
        std::fs::read_to_string(Path::new("/sys/fs/cgroup").join(name))
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
    };
    // `memory.max` reads `max` when there is no limit.
    let allowed = match (cgroup_file("memory.max"), cgroup_file("memory.current")) {
        (Some(max), Some(current)) => available.min(max.saturating_sub(current)),
        _ => available,
    };
    (allowed as f64 * MEMORY_SHARE) as u64
}

/// Reads the files of the generation at `dir`, up to `budget` bytes: the
/// most-used kinds are chosen first and read last. Stops early when
/// `keep_going` says so (checked per chunk). Blocking: call it off the
/// async workers.
pub fn warm(dir: &Path, budget: u64, keep_going: &dyn Fn() -> bool) -> std::io::Result<Warmed> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() {
            files.push((priority(&entry.path()), meta.len(), entry.path()));
        }
    }
    files.sort();
    let mut warmed = Warmed::default();
    let mut chosen = Vec::new();
    let mut planned = 0u64;
    for (_, len, path) in files {
        if planned + len > budget {
            warmed.skipped_bytes += len;
        } else {
            planned += len;
            chosen.push(path);
        }
    }
    let mut buf = vec![0u8; CHUNK];
    for path in chosen.iter().rev() {
        // A file merged away since the listing, or one that fails to read,
        // is no reason to leave the others cold.
        let Ok(mut file) = std::fs::File::open(path) else {
            continue;
        };
        loop {
            if !keep_going() {
                return Ok(warmed);
            }
            match file.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => warmed.bytes += n as u64,
            }
        }
        warmed.files += 1;
    }
    Ok(warmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_most_used_files_first_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.store"), vec![1u8; 300]).unwrap();
        std::fs::write(dir.path().join("a.term"), vec![1u8; 100]).unwrap();
        std::fs::write(dir.path().join("a.idx"), vec![1u8; 200]).unwrap();
        let all = warm(dir.path(), u64::MAX, &|| true).unwrap();
        assert_eq!((all.files, all.bytes, all.skipped_bytes), (3, 600, 0));
        // 350 bytes hold the dictionary and the postings, not the store.
        let some = warm(dir.path(), 350, &|| true).unwrap();
        assert_eq!((some.files, some.bytes, some.skipped_bytes), (2, 300, 300));
    }

    #[test]
    fn a_shutdown_stops_the_reading() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.idx"), vec![1u8; 100]).unwrap();
        let stopped = warm(dir.path(), u64::MAX, &|| false).unwrap();
        assert_eq!((stopped.files, stopped.bytes), (0, 0));
    }

    #[test]
    fn the_default_budget_is_a_share_of_available_memory() {
        if Path::new("/proc/meminfo").exists() {
            assert!(default_budget() > 0);
        }
    }
}
