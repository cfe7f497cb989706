//! Where the tail stands: the position, the newest id applied and the gaps
//! below it. Free of I/O, so every rule about gaps is tested alone.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chaja_index::{Checkpoint, GapRange};
use chaja_store::outbox::OutboxRow;

/// A run of missing outbox ids, `first..=last` (the map key is `first`).
#[derive(Debug, Clone)]
pub(super) struct Gap {
    pub(super) last: i64,
    pub(super) noticed: Instant,
    /// When a locking read last found it still held.
    pub(super) checked: Option<Instant>,
    /// Past the grace period: the recorded position has moved past it.
    pub(super) late: bool,
    /// A locking read just before the current read found no transaction
    /// holding any of it: whatever of it this read does not find never
    /// will be.
    pub(super) settled: bool,
}

/// A gap is checked for settling no sooner than this after it is noticed,
/// and then at most this often. An InnoDB insert allocates its
/// auto-increment id a moment before its row (and the lock on it) exists;
/// this leaves that moment far behind.
pub(super) const SETTLE_EVERY: Duration = Duration::from_secs(1);

/// Gap runs kept at most. Past this the indexer stops reading new changes
/// (and says so) until gaps resolve: it never drops one to save memory.
pub(super) const MAX_GAP_RUNS: usize = 100_000;

/// Position bookkeeping, kept apart from I/O so it can be tested alone.
#[derive(Debug, Clone)]
pub(super) struct Position {
    /// Everything at or below is applied, except late gaps.
    pub(super) committed: i64,
    /// The newest outbox id applied.
    pub(super) high: i64,
    /// `created_at` of the outbox row at `high`, when known.
    pub(super) high_created_at: Option<i64>,
    pub(super) gaps: BTreeMap<i64, Gap>,
}

impl Position {
    pub(super) fn new(checkpoint: &Checkpoint, now: Instant) -> Position {
        let mut gaps = BTreeMap::new();
        for range in &checkpoint.gaps {
            gaps.insert(
                range.first,
                Gap {
                    last: range.last,
                    noticed: now,
                    checked: None,
                    late: range.late,
                    settled: false,
                },
            );
        }
        Position {
            committed: checkpoint.outbox_seq,
            high: checkpoint.high.unwrap_or(checkpoint.outbox_seq),
            high_created_at: checkpoint.high_created_at,
            gaps,
        }
    }

    pub(super) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            outbox_seq: self.committed,
            high: Some(self.high),
            high_created_at: self.high_created_at,
            gaps: self
                .gaps
                .iter()
                .map(|(first, gap)| GapRange {
                    first: *first,
                    last: gap.last,
                    late: gap.late,
                })
                .collect(),
        }
    }

    /// Every outbox row this position could still need is above this: see
    /// `Checkpoint::low_water`. What replicas report for pruning.
    pub(super) fn low_water(&self) -> i64 {
        match self.gaps.keys().next() {
            Some(first) => (first - 1).min(self.committed),
            None => self.committed,
        }
    }

    /// The gap runs to re-read.
    pub(super) fn ranges(&self) -> Vec<(i64, i64)> {
        self.gaps.iter().map(|(f, g)| (*f, g.last)).collect()
    }

    /// The gaps due for a settling check at `now`.
    pub(super) fn due(&self, now: Instant) -> Vec<(i64, i64)> {
        self.gaps
            .iter()
            .filter(|(_, gap)| {
                let since = gap.checked.unwrap_or(gap.noticed);
                now.duration_since(since) >= SETTLE_EVERY
            })
            .map(|(first, gap)| (*first, gap.last))
            .collect()
    }

    /// Records a settling check of the gap starting at `first`.
    pub(super) fn checked(&mut self, first: i64, settled: bool, now: Instant) {
        if let Some(gap) = self.gaps.get_mut(&first) {
            gap.checked = Some(now);
            gap.settled = settled;
        }
    }

    /// Records the ids a read found, in any order: fills gaps, notices new
    /// ones above `high`.
    pub(super) fn applied(&mut self, rows: &[OutboxRow], now: Instant) {
        let mut seqs: Vec<(i64, i64)> = rows.iter().map(|r| (r.seq, r.created_at)).collect();
        seqs.sort_unstable();
        seqs.dedup();
        for (seq, created_at) in seqs {
            if seq > self.high {
                if seq > self.high + 1 {
                    self.gaps.insert(
                        self.high + 1,
                        Gap {
                            last: seq - 1,
                            noticed: now,
                            checked: None,
                            late: false,
                            settled: false,
                        },
                    );
                }
                self.high = seq;
                self.high_created_at = Some(created_at);
            } else {
                self.fill(seq);
            }
        }
    }

    /// Takes `seq` out of the gap that holds it, if any.
    pub(super) fn fill(&mut self, seq: i64) {
        let Some((&first, gap)) = self.gaps.range(..=seq).next_back() else {
            return;
        };
        if gap.last < seq {
            return;
        }
        let gap = self.gaps.remove(&first).expect("gap just found");
        if first < seq {
            let mut before = gap.clone();
            before.last = seq - 1;
            self.gaps.insert(first, before);
        }
        if seq < gap.last {
            self.gaps.insert(seq + 1, gap);
        }
    }

    /// After a read: forgets settled gaps (what the read did not find of
    /// them never will be found), makes gaps past `grace` late, and moves
    /// the recorded position. Returns the forgotten runs, for the log.
    pub(super) fn settle(&mut self, grace: Duration, now: Instant) -> Vec<(i64, i64)> {
        let mut forgotten = Vec::new();
        self.gaps.retain(|first, gap| {
            if gap.settled {
                forgotten.push((*first, gap.last));
                return false;
            }
            if now.duration_since(gap.noticed) >= grace {
                gap.late = true;
            }
            true
        });
        self.committed = self.safe();
        forgotten
    }

    /// The position it is safe to record: just below the oldest gap still
    /// within its grace period.
    pub(super) fn safe(&self) -> i64 {
        let pending = self.gaps.iter().find(|(_, gap)| !gap.late);
        match pending {
            Some((first, _)) => (first - 1).max(self.committed),
            None => self.high.max(self.committed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(60);

    fn rows(seqs: &[i64]) -> Vec<OutboxRow> {
        seqs.iter()
            .map(|&seq| OutboxRow {
                seq,
                created_at: 1000 + seq,
                change: None,
                probe: false,
            })
            .collect()
    }

    #[test]
    fn position_stops_below_a_gap_until_it_fills() {
        let now = Instant::now();
        let mut p = Position::new(&Checkpoint::at(10), now);
        p.applied(&rows(&[11, 13, 14]), now);
        p.settle(GRACE, now);
        assert_eq!((p.high, p.committed), (14, 11));
        p.applied(&rows(&[12]), now);
        p.settle(GRACE, now);
        assert_eq!(p.committed, 14);
        assert!(p.gaps.is_empty());
    }

    #[test]
    fn a_late_gap_lets_the_position_pass_but_is_still_read() {
        let start = Instant::now();
        let mut p = Position::new(&Checkpoint::at(0), start);
        p.applied(&rows(&[2]), start);
        p.settle(GRACE, start);
        assert_eq!(p.committed, 0);
        let later = start + GRACE + Duration::from_secs(1);
        assert!(p.settle(GRACE, later).is_empty());
        assert_eq!(p.committed, 2);
        // Still re-read, and applied when its transaction commits.
        assert_eq!(p.ranges(), [(1, 1)]);
        p.applied(&rows(&[1]), later);
        assert!(p.gaps.is_empty());
        assert_eq!(p.committed, 2);
    }

    #[test]
    fn a_gap_is_forgotten_only_after_a_check_finds_it_settled() {
        let now = Instant::now();
        let mut p = Position::new(&Checkpoint::at(0), now);
        p.applied(&rows(&[5]), now);
        p.settle(GRACE, now);
        // Not due at once: the inserting transaction may not hold its row
        // lock yet.
        assert!(p.due(now).is_empty());
        let now = now + SETTLE_EVERY;
        assert_eq!(p.due(now), [(1, 4)]);
        // Still held: kept, and not due again for a while.
        p.checked(1, false, now);
        p.applied(&rows(&[2]), now);
        p.settle(GRACE, now);
        assert_eq!(p.ranges(), [(1, 1), (3, 4)]);
        assert!(p.due(now).is_empty());
        // Settled: what this read did not find never will be.
        let now = now + SETTLE_EVERY;
        assert_eq!(p.due(now), [(1, 1), (3, 4)]);
        p.checked(1, true, now);
        p.checked(3, true, now);
        p.applied(&rows(&[4]), now);
        assert_eq!(p.settle(GRACE, now), [(1, 1), (3, 3)]);
        assert!(p.gaps.is_empty());
        assert_eq!(p.committed, 5);
    }

    #[test]
    fn gaps_survive_a_checkpoint_round_trip() {
        let now = Instant::now();
        let mut p = Position::new(&Checkpoint::at(0), now);
        p.applied(&rows(&[3, 7]), now);
        p.settle(GRACE, now + GRACE);
        let checkpoint = p.checkpoint();
        let text = serde_json::to_string(&checkpoint).unwrap();
        let back: Checkpoint = serde_json::from_str(&text).unwrap();
        let q = Position::new(&back, now);
        assert_eq!(q.ranges(), [(1, 2), (4, 6)]);
        assert_eq!((q.committed, q.high, q.high_created_at), (7, 7, Some(1007)));
        assert!(q.gaps.values().all(|g| g.late));
        // An old payload with only a position still reads.
        let old: Checkpoint = serde_json::from_str(r#"{"outbox_seq":42}"#).unwrap();
        assert_eq!(old, Checkpoint::at(42));
    }
}
