//! The concurrent writers: plain SQL in explicit transactions, each on its
//! own rows, some held open past the gap grace, some rolled back, telling
//! the model what they know was committed.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use rand::rngs::StdRng;
use rand::Rng;
use sqlx::mysql::MySqlConnection;
use sqlx::Connection;
use tokio_util::sync::CancellationToken;

use super::model::{Effect, Key, Model, RowKind};
use super::Violations;

/// Longest wait for one SQL statement; a crashed MariaDB fails faster.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a statement with `STATEMENT_TIMEOUT`; the error as text. A macro,
/// not a generic function: sqlx's executor lifetimes and a generic future
/// parameter make the writer's future fail to be `Send`.
macro_rules! timed {
    ($query:expr) => {
        match tokio::time::timeout(STATEMENT_TIMEOUT, $query).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("statement timed out".to_owned()),
        }
    };
}

/// Korean filler, so that rows look like the platform's and the n-gram
/// fields see Hangul next to the ASCII tokens.
const FILLER: &[&str] = &[
    "스프링 부트에서 트랜잭션이 롤백되지 않아요",
    "인덱스를 다시 만들면 검색이 빨라질까요",
    "마리아디비 복제 지연이 생깁니다",
    "레디스 캐시가 가끔 멈춥니다",
    "한글 형태소 분석은 어떻게 하나요",
    "배포 후에 서버가 재시작됩니다",
    "질문 내용을 자세히 적어 주세요",
    "답변 감사합니다 덕분에 해결했어요",
    "쿼리가 느려서 실행 계획을 봤습니다",
    "외래 키 제약 조건 때문에 삭제가 안 돼요",
];

fn filler(rng: &mut StdRng) -> String {
    let n = rng.random_range(1..=3);
    (0..n)
        .map(|_| FILLER[rng.random_range(0..FILLER.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug, Default, Clone, Copy)]
pub struct WriterStats {
    pub committed: u64,
    pub rolled_back: u64,
    /// A statement failed (MariaDB down, a timeout): rolled back, known.
    pub aborted: u64,
    /// COMMIT failed without an answer: it may or may not have happened.
    pub unknown: u64,
}

impl WriterStats {
    pub(super) fn add(&mut self, other: WriterStats) {
        self.committed += other.committed;
        self.rolled_back += other.rolled_back;
        self.aborted += other.aborted;
        self.unknown += other.unknown;
    }
}

/// One statement of a transaction, chosen by the writer's RNG.
#[derive(Debug, Clone, Copy)]
enum Op {
    InsertQuestion,
    InsertReview(Key),
    Update(Key),
    /// A change of a column chaja does not read (`updated_at`, as a view
    /// counter would be): it must write nothing and change nothing.
    Counter(Key),
    /// A like: `like_count + 1`, an attribute chaja returns, so a change
    /// the index applies as a patch of the row's attributes.
    Like(Key),
    DeleteReview(Key),
    DeleteQuestion(Key),
}

/// The rows a writer owns and knows to be live. Writers touch only their
/// own rows, so they never wait on each other's locks; they still race on
/// outbox ids, which is what the indexer's gap handling is about.
#[derive(Clone, Default)]
pub(super) struct Owned {
    questions: BTreeMap<Key, i64>,
    /// Review key → (id, question id).
    reviews: BTreeMap<Key, (i64, i64)>,
}

impl Owned {
    fn forget(&mut self, keys: &[Key]) {
        for key in keys {
            self.questions.remove(key);
            self.reviews.remove(key);
        }
    }
}

pub(super) struct Writer {
    pub(super) index: usize,
    pub(super) run: String,
    pub(super) user: i64,
    pub(super) url: String,
    pub(super) rng: StdRng,
    pub(super) model: Arc<Mutex<Model>>,
    pub(super) violations: Violations,
    pub(super) conn: Option<MySqlConnection>,
    pub(super) owned: Owned,
    /// Review ids this writer created, for deleting a question's reviews.
    pub(super) review_keys: HashMap<i64, Key>,
    pub(super) next_n: u64,
    pub(super) next_version: u64,
    /// Whether some transactions stay open past the gap grace.
    pub(super) long_holds: bool,
    pub(super) stats: WriterStats,
}

/// Why a transaction stopped before COMMIT.
type StatementError = String;

impl Writer {
    pub(super) async fn run(mut self, stop: CancellationToken) -> WriterStats {
        while !stop.is_cancelled() {
            self.transaction(&stop).await;
            let think = Duration::from_millis(self.rng.random_range(5..60));
            tokio::select! {
                _ = tokio::time::sleep(think) => {}
                _ = stop.cancelled() => {}
            }
        }
        if let Some(conn) = self.conn.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), conn.close()).await;
        }
        self.stats
    }

    async fn connection(&mut self, stop: &CancellationToken) -> Option<MySqlConnection> {
        if let Some(conn) = self.conn.take() {
            return Some(conn);
        }
        match tokio::time::timeout(Duration::from_secs(5), MySqlConnection::connect(&self.url))
            .await
        {
            Ok(Ok(conn)) => Some(conn),
            _ => {
                // MariaDB is down: try again shortly.
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(self.rng.random_range(200..500))) => {}
                    _ = stop.cancelled() => {}
                }
                None
            }
        }
    }

    /// One transaction of 1–3 statements, held open for a while, then
    /// committed or (15%) rolled back.
    async fn transaction(&mut self, stop: &CancellationToken) {
        let Some(mut conn) = self.connection(stop).await else {
            return;
        };
        let mut owned = self.owned.clone();
        let mut effects: Vec<(Key, Effect)> = Vec::new();
        let mut touched: Vec<Key> = Vec::new();
        let statements = self.rng.random_range(1..=3);
        let opened = Instant::now();
        let mut result = exec(&mut conn, "START TRANSACTION").await;
        for _ in 0..statements {
            if result.is_err() || stop.is_cancelled() {
                break;
            }
            let op = self.pick(&owned);
            result = self
                .statement(&mut conn, op, &mut owned, &mut effects, &mut touched)
                .await;
        }
        if result.is_ok() && self.rng.random_bool(0.5) {
            let hold = if !self.long_holds || self.rng.random_bool(0.9) {
                Duration::from_millis(self.rng.random_range(0..500))
            } else {
                // Past the gap grace: the outbox ids it took stay missing.
                Duration::from_millis(self.rng.random_range(4000..8000))
            };
            tokio::select! {
                _ = tokio::time::sleep(hold) => {}
                _ = stop.cancelled() => {}
            }
        }
        if result.is_err() {
            // Nothing was committed: the server rolls the transaction back
            // when told, or when the connection goes away.
            if exec(&mut conn, "ROLLBACK").await.is_ok() {
                self.conn = Some(conn);
            }
            self.model.lock().unwrap().released(&touched);
            self.stats.aborted += 1;
            return;
        }
        if stop.is_cancelled() || self.rng.random_bool(0.15) {
            if exec(&mut conn, "ROLLBACK").await.is_ok() {
                self.conn = Some(conn);
            }
            self.model.lock().unwrap().released(&touched);
            self.stats.rolled_back += 1;
            return;
        }
        match exec(&mut conn, "COMMIT").await {
            Ok(_) => {
                let now = Instant::now();
                self.model
                    .lock()
                    .unwrap()
                    .committed(&effects, now, now - opened);
                self.owned = owned;
                self.conn = Some(conn);
                self.stats.committed += 1;
            }
            Err(_) => {
                // Unknown: the final check reads the truth from the tables.
                self.model.lock().unwrap().unknown(&touched);
                self.owned.forget(&touched);
                self.stats.unknown += 1;
            }
        }
    }

    fn pick(&mut self, owned: &Owned) -> Op {
        if owned.questions.is_empty() {
            return Op::InsertQuestion;
        }
        let question = *nth_key(&mut self.rng, &owned.questions);
        let roll = self.rng.random_range(0..100);
        // Keep the working set from growing without end.
        let roll = if owned.questions.len() > 30 && roll < 30 {
            roll + 70
        } else {
            roll
        };
        match roll {
            0..30 => Op::InsertQuestion,
            30..50 => Op::InsertReview(question),
            50..55 => Op::Counter(question),
            55..60 => Op::Like(question),
            60..80 => {
                if !owned.reviews.is_empty() && self.rng.random_bool(0.4) {
                    Op::Update(*nth_key(&mut self.rng, &owned.reviews))
                } else {
                    Op::Update(question)
                }
            }
            80..90 if !owned.reviews.is_empty() => {
                Op::DeleteReview(*nth_key(&mut self.rng, &owned.reviews))
            }
            _ => Op::DeleteQuestion(question),
        }
    }

    fn new_key(&mut self, kind: RowKind) -> Key {
        self.next_n += 1;
        Key {
            kind,
            writer: self.index,
            n: self.next_n,
        }
    }

    fn content(&mut self, key: Key, version: u64) -> String {
        let filler = filler(&mut self.rng);
        format!(
            "chk{} {} {} {filler}",
            self.run,
            key.token(),
            key.version_token(version)
        )
    }

    fn touch(&self, key: Key, touched: &mut Vec<Key>) {
        self.model.lock().unwrap().busy(key);
        touched.push(key);
    }

    /// Boxed: sqlx's executor lifetimes otherwise keep the writer's future
    /// from being provably `Send` (rust-lang/rust#102211).
    fn statement<'a>(
        &'a mut self,
        conn: &'a mut MySqlConnection,
        op: Op,
        owned: &'a mut Owned,
        effects: &'a mut Vec<(Key, Effect)>,
        touched: &'a mut Vec<Key>,
    ) -> futures::future::BoxFuture<'a, Result<(), StatementError>> {
        async move {
            self.statement_inner(conn, op, owned, effects, touched)
                .await
        }
        .boxed()
    }

    async fn statement_inner(
        &mut self,
        conn: &mut MySqlConnection,
        op: Op,
        owned: &mut Owned,
        effects: &mut Vec<(Key, Effect)>,
        touched: &mut Vec<Key>,
    ) -> Result<(), StatementError> {
        match op {
            Op::InsertQuestion => {
                let key = self.new_key(RowKind::Question);
                self.model.lock().unwrap().created(key);
                touched.push(key);
                self.next_version += 1;
                let version = self.next_version;
                let title = format!("{} chk{} {}", filler(&mut self.rng), self.run, key.token());
                let content = self.content(key, version);
                let query = sqlx::query(
                    "INSERT INTO questions (author_id, title, content) VALUES (?, ?, ?)",
                )
                .bind(self.user)
                .bind(title)
                .bind(content);
                let id = timed!(query.execute(&mut *conn))?.last_insert_id() as i64;
                self.model.lock().unwrap().set_id(key, id);
                owned.questions.insert(key, id);
                effects.push((key, Effect::Insert { id, version }));
            }
            Op::InsertReview(question) => {
                let question_id = owned.questions[&question];
                let key = self.new_key(RowKind::Review);
                self.model.lock().unwrap().created(key);
                touched.push(key);
                self.next_version += 1;
                let version = self.next_version;
                let content = self.content(key, version);
                let query = sqlx::query(
                    "INSERT INTO reviews (question_id, author_id, content) VALUES (?, ?, ?)",
                )
                .bind(question_id)
                .bind(self.user)
                .bind(content);
                let id = timed!(query.execute(&mut *conn))?.last_insert_id() as i64;
                self.model.lock().unwrap().set_id(key, id);
                self.review_keys.insert(id, key);
                owned.reviews.insert(key, (id, question_id));
                effects.push((key, Effect::Insert { id, version }));
            }
            Op::Update(key) => {
                let (table, id) = match key.kind {
                    RowKind::Question => ("questions", owned.questions[&key]),
                    RowKind::Review => ("reviews", owned.reviews[&key].0),
                };
                self.touch(key, touched);
                self.next_version += 1;
                let version = self.next_version;
                let content = self.content(key, version);
                // Half the updates leave updated_at alone, as a program that
                // does not know about it would; the index must follow anyway.
                let sql = if self.rng.random_bool(0.5) {
                    format!(
                        "UPDATE {table} SET content = ?, updated_at = updated_at + 1 WHERE id = ?"
                    )
                } else {
                    format!("UPDATE {table} SET content = ? WHERE id = ?")
                };
                let query = sqlx::query(&sql).bind(content).bind(id);
                let done = timed!(query.execute(&mut *conn))?;
                self.expect_one(done.rows_affected(), "UPDATE", key, id);
                effects.push((key, Effect::Update { version }));
            }
            Op::Counter(key) => {
                let id = owned.questions[&key];
                self.touch(key, touched);
                let query =
                    sqlx::query("UPDATE questions SET updated_at = updated_at + 1 WHERE id = ?")
                        .bind(id);
                let done = timed!(query.execute(&mut *conn))?;
                self.expect_one(done.rows_affected(), "UPDATE", key, id);
            }
            Op::Like(key) => {
                let id = owned.questions[&key];
                self.touch(key, touched);
                let query =
                    sqlx::query("UPDATE questions SET like_count = like_count + 1 WHERE id = ?")
                        .bind(id);
                let done = timed!(query.execute(&mut *conn))?;
                self.expect_one(done.rows_affected(), "UPDATE", key, id);
            }
            Op::DeleteReview(key) => {
                let id = owned.reviews[&key].0;
                self.touch(key, touched);
                let query = sqlx::query("DELETE FROM reviews WHERE id = ?").bind(id);
                let done = timed!(query.execute(&mut *conn))?;
                self.expect_one(done.rows_affected(), "DELETE", key, id);
                owned.reviews.remove(&key);
                effects.push((key, Effect::Delete));
            }
            Op::DeleteQuestion(key) => {
                let question_id = owned.questions[&key];
                // Foreign keys do not cascade: delete its reviews first, one
                // statement each, including any whose COMMIT had an unknown
                // outcome (the tables know).
                let query = sqlx::query_scalar::<_, i64>(
                    "SELECT id FROM reviews WHERE question_id = ? ORDER BY id",
                )
                .bind(question_id);
                let reviews = timed!(query.fetch_all(&mut *conn))?;
                for review_id in reviews {
                    let review = self.review_keys.get(&review_id).copied();
                    if let Some(review) = review {
                        self.touch(review, touched);
                    }
                    let query = sqlx::query("DELETE FROM reviews WHERE id = ?").bind(review_id);
                    timed!(query.execute(&mut *conn))?;
                    if let Some(review) = review {
                        owned.reviews.remove(&review);
                        effects.push((review, Effect::Delete));
                    }
                }
                self.touch(key, touched);
                let query = sqlx::query("DELETE FROM questions WHERE id = ?").bind(question_id);
                let done = timed!(query.execute(&mut *conn))?;
                self.expect_one(done.rows_affected(), "DELETE", key, question_id);
                owned.questions.remove(&key);
                effects.push((key, Effect::Delete));
            }
        }
        Ok(())
    }

    /// The writer's own rows change only through it: a statement that finds
    /// no row means a committed transaction was lost by MariaDB, or the
    /// checker's model is wrong. Either way the checks after it mean little.
    fn expect_one(&self, affected: u64, what: &str, key: Key, id: i64) {
        if affected != 1 {
            self.violations.record(format!(
                "model: {what} of {} (id {id}) affected {affected} rows, the writer expected 1",
                key.token()
            ));
        }
    }
}

fn nth_key<'a, V>(rng: &mut StdRng, map: &'a BTreeMap<Key, V>) -> &'a Key {
    map.keys().nth(rng.random_range(0..map.len())).unwrap()
}

/// A statement without parameters (transaction control).
fn exec<'a>(
    conn: &'a mut MySqlConnection,
    sql: &'static str,
) -> futures::future::BoxFuture<'a, Result<(), StatementError>> {
    async move {
        // A plain string is sent unprepared, as sqlx's own BEGIN is.
        let done: Result<_, StatementError> = timed!(sqlx::Executor::execute(&mut *conn, sql));
        done.map(|_| ())
    }
    .boxed()
}
