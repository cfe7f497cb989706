//! The rows the writers create, the tokens that name them in the index, and
//! the model of what was committed, shared by the writers and the checks.

use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum RowKind {
    Question,
    Review,
}

impl RowKind {
    /// The `type` of a search hit.
    pub(super) fn api(self) -> &'static str {
        match self {
            RowKind::Question => "question",
            RowKind::Review => "review",
        }
    }

    fn letter(self) -> char {
        match self {
            RowKind::Question => 'q',
            RowKind::Review => 'r',
        }
    }
}

/// A row as the writers name it, known before MariaDB assigns its id (so a
/// row whose INSERT had an unknown outcome can still be looked for).
///
/// Its token `zq<kind><writer>n<n>qz` and a version's token
/// `vx<writer>n<n>r<version>xv` are delimited so that no token is a
/// substring of another, and are lowercase ASCII, which normalization
/// leaves alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Key {
    pub(super) kind: RowKind,
    pub(super) writer: usize,
    pub(super) n: u64,
}

impl Key {
    pub(super) fn token(self) -> String {
        format!("zq{}{}n{}qz", self.kind.letter(), self.writer, self.n)
    }

    pub(super) fn version_token(self, version: u64) -> String {
        format!("vx{}n{}r{}xv", self.writer, self.n, version)
    }

    /// The key in a row's content, as the writers wrote it.
    pub(super) fn find(kind: RowKind, content: &str) -> Option<Key> {
        let start = content.find(&format!("zq{}", kind.letter()))? + 3;
        let body = &content[start..];
        let end = body.find("qz")?;
        let (writer, n) = body[..end].split_once('n')?;
        Some(Key {
            kind,
            writer: writer.parse().ok()?,
            n: n.parse().ok()?,
        })
    }
}

/// The version token in a row's content.
pub(super) fn find_version_token(content: &str) -> Option<&str> {
    let start = content.find("vx")?;
    let end = content[start..].find("xv")? + start + 2;
    Some(&content[start..end])
}

/// What a committed statement did to a row.
#[derive(Debug, Clone, Copy)]
pub(super) enum Effect {
    Insert { id: i64, version: u64 },
    Update { version: u64 },
    Delete,
}

/// What the writers know about one row.
#[derive(Debug, Clone)]
pub(super) struct RowState {
    /// MariaDB's id, once the INSERT answered.
    pub(super) id: Option<i64>,
    pub(super) version: u64,
    pub(super) live: bool,
    /// The last transaction that touched it is known to have committed (or
    /// it never committed anything): false after an unknown outcome.
    pub(super) known: bool,
    /// Set once any transaction touching it committed.
    pub(super) ever_committed: bool,
    /// A transaction that touches it is open.
    pub(super) busy: bool,
    /// When the writer saw its last COMMIT succeed (an upper bound on the
    /// commit time, so lag measured from it is never overstated).
    pub(super) committed_at: Instant,
    /// Bumped on every commit or unknown outcome, so a check can tell that
    /// the row changed while it searched.
    pub(super) changes: u64,
    /// How long the transaction of its last commit was open, which tells
    /// whether it outlived the gap grace.
    pub(super) held: Duration,
}

/// Every row any writer ever created, shared by the writers and the checker.
pub(super) struct Model {
    /// When the writers started; times in messages are relative to it.
    started: Instant,
    pub(super) rows: HashMap<Key, RowState>,
}

impl Model {
    pub(super) fn new(started: Instant) -> Model {
        Model {
            started,
            rows: HashMap::new(),
        }
    }

    /// The row's last commit, for a divergence message.
    pub(super) fn describe(&self, key: Key) -> String {
        match self.rows.get(&key) {
            None => "never written by the checker".to_owned(),
            Some(row) if !row.known => "its last transaction had an unknown outcome".to_owned(),
            Some(row) if !row.ever_committed => "never committed (rolled back)".to_owned(),
            Some(row) => format!(
                "last committed at {:.1} s by a transaction open for {:.1} s",
                row.committed_at.duration_since(self.started).as_secs_f64(),
                row.held.as_secs_f64()
            ),
        }
    }

    /// A row is about to be inserted: from now on it must either be in the
    /// tables or not be found.
    pub(super) fn created(&mut self, key: Key) {
        self.rows.insert(
            key,
            RowState {
                id: None,
                version: 0,
                live: false,
                known: true,
                ever_committed: false,
                busy: true,
                committed_at: Instant::now(),
                changes: 0,
                held: Duration::ZERO,
            },
        );
    }

    pub(super) fn set_id(&mut self, key: Key, id: i64) {
        if let Some(row) = self.rows.get_mut(&key) {
            row.id = Some(id);
        }
    }

    pub(super) fn busy(&mut self, key: Key) {
        if let Some(row) = self.rows.get_mut(&key) {
            row.busy = true;
        }
    }

    pub(super) fn committed(&mut self, effects: &[(Key, Effect)], at: Instant, held: Duration) {
        for (key, effect) in effects {
            let Some(row) = self.rows.get_mut(key) else {
                continue;
            };
            match *effect {
                Effect::Insert { id, version } => {
                    row.id = Some(id);
                    row.version = version;
                    row.live = true;
                }
                Effect::Update { version } => row.version = version,
                Effect::Delete => row.live = false,
            }
            row.known = true;
            row.ever_committed = true;
            row.busy = false;
            row.committed_at = at;
            row.held = held;
            row.changes += 1;
        }
    }

    /// The transaction did not commit: the rows are as they were.
    pub(super) fn released(&mut self, keys: &[Key]) {
        for key in keys {
            if let Some(row) = self.rows.get_mut(key) {
                row.busy = false;
            }
        }
    }

    /// COMMIT failed without saying whether it happened.
    pub(super) fn unknown(&mut self, keys: &[Key]) {
        for key in keys {
            if let Some(row) = self.rows.get_mut(key) {
                row.known = false;
                row.busy = false;
                row.changes += 1;
            }
        }
    }

    /// Rows whose state is known, not being changed, and last committed
    /// longer than `bound` ago: the index must show them as they are.
    pub(super) fn settled(&self, bound: Duration) -> Vec<(Key, RowState)> {
        self.rows
            .iter()
            .filter(|(_, r)| {
                r.known
                    && r.ever_committed
                    && !r.busy
                    && r.id.is_some()
                    && r.committed_at.elapsed() > bound
            })
            .map(|(k, r)| (*k, r.clone()))
            .collect()
    }
}
