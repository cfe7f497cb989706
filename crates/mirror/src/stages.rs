//! Where a rebuild's time goes, stage by stage.
//!
//! A rebuild is a pipeline: the async side reads pages of rows from the
//! database, one thread analyses each page (the Korean analyzer, on its
//! own pool), another hands the analysed documents to tantivy's indexing
//! threads, and at the end the writer commits and merges. The stages
//! overlap, so their wall times do not add up to the rebuild's: each
//! figure says how long one side waited on, or worked in, that stage. The CPU figures come
//! from the kernel's per-thread accounting (`/proc`), so that "indexing"
//! is tantivy's threads' own work rather than the time the feeding side
//! was blocked on them. Where `/proc` is missing they are `None`.

use std::fmt;
use std::time::Duration;

/// Wall and CPU times of one rebuild, by stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stages {
    /// The whole rebuild, lock to publish.
    pub wall: Duration,
    /// CPU the whole process spent meanwhile, every thread.
    pub cpu: Option<Duration>,
    /// Reading and counting the sample of rows that decides which
    /// trigrams are common (see `chaja_index::Trigrams`), before the scan.
    pub sampling: Duration,
    /// How many trigrams were found common; `None`: every trigram is
    /// indexed (a table too small to sample).
    pub common_trigrams: Option<usize>,
    /// How many 4-grams kept their positions; `None`: every one did (the
    /// default, or a table too small to sample).
    pub positional_fourgrams: Option<usize>,
    /// Waiting on the database for pages of rows (the async side).
    pub reading: Duration,
    /// Analysing pages with the Korean analyzer (the analysing thread's
    /// busy time; it runs a page ahead of indexing).
    pub analysis: Duration,
    /// CPU of the analyzer's threads.
    pub analysis_cpu: Option<Duration>,
    /// Sentences lindera analysed, and those found already analysed (see
    /// `chaja_index::morph::Analyzer::index_morphemes`), by any thread of
    /// the process meanwhile.
    pub sentences_analysed: u64,
    pub sentences_cached: u64,
    /// Handing documents to the writer, including the time it made the
    /// feeding thread wait while its indexing threads were busy.
    pub indexing_wait: Duration,
    /// The feeding thread waiting for analysed pages: indexing starved.
    pub analysis_wait: Duration,
    /// CPU of tantivy's indexing threads.
    pub indexing_cpu: Option<Duration>,
    /// The final commit (the last segments written out).
    pub commit: Duration,
    /// Waiting for the merges the commit started.
    pub merging: Duration,
}

impl fmt::Display for Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
        let cpu = |d: Option<Duration>| match d {
            Some(d) => format!(", {} of CPU", secs(d)),
            None => String::new(),
        };
        writeln!(f, "  wall           {}{}", secs(self.wall), cpu(self.cpu))?;
        let common = match self.common_trigrams {
            Some(n) => format!("{n} common trigrams"),
            None => "every trigram indexed".to_owned(),
        };
        let positional = match self.positional_fourgrams {
            Some(n) => format!(", {n} 4-grams with positions"),
            None => String::new(),
        };
        writeln!(
            f,
            "  sampling       {}, {common}{positional}",
            secs(self.sampling)
        )?;
        writeln!(
            f,
            "  reading rows   {} waiting on the database",
            secs(self.reading)
        )?;
        // Only the Korean analyzer reads sentences.
        let sentences = match self.sentences_analysed + self.sentences_cached {
            0 => String::new(),
            all => format!(
                ", {all} sentences, {:.1}% of them analysed before",
                self.sentences_cached as f64 * 100.0 / all as f64
            ),
        };
        writeln!(
            f,
            "  analysis       {}{}{}",
            secs(self.analysis),
            cpu(self.analysis_cpu),
            sentences,
        )?;
        writeln!(
            f,
            "  indexing       {} feeding the writer, {} waiting for analysis{}",
            secs(self.indexing_wait),
            secs(self.analysis_wait),
            cpu(self.indexing_cpu)
        )?;
        writeln!(f, "  commit         {}", secs(self.commit))?;
        write!(f, "  merging        {}", secs(self.merging))
    }
}

/// The kernel counts CPU time in clock ticks of `USER_HZ`, which Linux
/// fixes at 100 for user space whatever the kernel's own tick rate.
const TICKS_PER_SECOND: u64 = 100;

/// CPU time (user + system) this process has spent so far.
pub fn process_cpu() -> Option<Duration> {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| cpu_of(&stat))
}

/// CPU time spent so far by this process's live threads whose name starts
/// with `prefix` (the kernel keeps the first 15 bytes of a name).
pub fn threads_cpu(prefix: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let path = task.path();
        let Ok(name) = std::fs::read_to_string(path.join("comm")) else {
            continue; // the thread ended meanwhile
        };
        if !name.trim_end().starts_with(prefix) {
            continue;
        }
        if let Some(cpu) = std::fs::read_to_string(path.join("stat"))
            .ok()
            .and_then(|stat| cpu_of(&stat))
        {
            total += cpu;
        }
    }
    Some(total)
}

/// `utime + stime` of a `/proc/<pid>/stat` line. The name field is in
/// parentheses and may itself hold spaces and parentheses, so the fields
/// are counted from the last `)`: after it come the state (field 3), and
/// `utime` and `stime` are fields 14 and 15.
fn cpu_of(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis(
        (user + system) * 1000 / TICKS_PER_SECOND,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_read_after_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 100 0 0";
        assert_eq!(cpu_of(stat), Some(Duration::from_secs(3)));
        assert_eq!(cpu_of("no parenthesis"), None);
        assert_eq!(cpu_of("1 (x) S 1 2"), None);
    }

    #[test]
    fn this_process_and_its_threads_have_a_cpu_time() {
        // Burn a little CPU so that at least one tick is counted.
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(process_cpu().is_some_and(|cpu| cpu > Duration::ZERO));
        // A name no thread has counts nothing; the call itself works.
        assert_eq!(threads_cpu("no-such-thread!"), Some(Duration::ZERO));
    }
}
