//! The platform's own rows: users, questions, reviews, comments, likes.
//!
//! Writes here never touch the index: the triggers put each change in the
//! outbox in the same transaction, and the indexer takes it from there.

use serde::Serialize;
use sqlx::Row;

use chaja_core::clock::now_ms;
use chaja_store::{insert, text, Db, Dialect};

use crate::{DemoError, Result};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Question {
    pub id: i64,
    pub author_id: i64,
    pub title: String,
    pub content: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Review {
    pub id: i64,
    pub question_id: i64,
    pub author_id: i64,
    pub content: String,
    /// ★1 to ★5, or none.
    pub rating: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn create_user(db: &Db, name: &str) -> Result<i64> {
    let query = sqlx::query("INSERT INTO users (name, created_at) VALUES (?, ?)")
        .bind(name)
        .bind(now_ms());
    Ok(insert(db, query).await?)
}

pub async fn user_exists(db: &Db, id: i64) -> Result<bool> {
    let found: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE id = ?")
        .bind(id)
        .fetch_optional(&db.pool)
        .await?;
    Ok(found.is_some())
}

async fn require_user(db: &Db, id: i64) -> Result<()> {
    if user_exists(db, id).await? {
        Ok(())
    } else {
        Err(DemoError::UnknownUser(format!(
            "author {id} does not exist"
        )))
    }
}

pub async fn create_question(db: &Db, author_id: i64, title: &str, content: &str) -> Result<i64> {
    require_user(db, author_id).await?;
    let now = now_ms();
    let query = sqlx::query(
        "INSERT INTO questions (author_id, title, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(author_id)
    .bind(title)
    .bind(content)
    .bind(now)
    .bind(now)
    ;
    Ok(insert(db, query).await?)
}

pub async fn get_question(db: &Db, id: i64) -> Result<Question> {
    let row = sqlx::query(
        "SELECT id, author_id, title, content, created_at, updated_at FROM questions WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    .ok_or(DemoError::NotFound("question"))?;
    question_from_row(&row)
}

fn question_from_row(row: &sqlx::any::AnyRow) -> Result<Question> {
    Ok(Question {
        id: row.try_get(0)?,
        author_id: row.try_get(1)?,
        title: text(row, 2)?,
        content: text(row, 3)?,
        created_at: row.try_get(4)?,
        updated_at: row.try_get(5)?,
    })
}

pub async fn update_question(db: &Db, id: i64, title: &str, content: &str) -> Result<()> {
    let result =
        sqlx::query("UPDATE questions SET title = ?, content = ?, updated_at = ? WHERE id = ?")
            .bind(title)
            .bind(content)
            .bind(now_ms())
            .bind(id)
            .execute(&db.pool)
            .await?;
    found(result.rows_affected(), "question")
}

/// Deletes a question with everything that hangs off it, in one transaction.
/// Reviews are deleted one statement at a time on purpose: cascaded deletes
/// would skip their outbox triggers on MySQL.
pub async fn delete_question(db: &Db, id: i64) -> Result<()> {
    let mut tx = db.pool.begin().await?;
    for sql in [
        "DELETE FROM comments WHERE review_id IN (SELECT id FROM reviews WHERE question_id = ?)",
        "DELETE FROM comments WHERE question_id = ?",
        "DELETE FROM question_likes WHERE question_id = ?",
        "DELETE FROM question_stats WHERE question_id = ?",
        "DELETE FROM reviews WHERE question_id = ?",
    ] {
        sqlx::query(sql).bind(id).execute(&mut *tx).await?;
    }
    let result = sqlx::query("DELETE FROM questions WHERE id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    found(result.rows_affected(), "question")?;
    tx.commit().await?;
    Ok(())
}

pub async fn create_review(
    db: &Db,
    question_id: i64,
    author_id: i64,
    content: &str,
    rating: Option<i64>,
) -> Result<i64> {
    get_question(db, question_id).await?;
    require_user(db, author_id).await?;
    let now = now_ms();
    let query = sqlx::query(
        "INSERT INTO reviews (question_id, author_id, content, rating, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(question_id)
    .bind(author_id)
    .bind(content)
    .bind(rating)
    .bind(now)
    .bind(now)
    ;
    Ok(insert(db, query).await?)
}

pub async fn get_review(db: &Db, id: i64) -> Result<Review> {
    let row = sqlx::query(
        "SELECT id, question_id, author_id, content, created_at, updated_at, rating FROM reviews WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    .ok_or(DemoError::NotFound("review"))?;
    review_from_row(&row)
}

fn review_from_row(row: &sqlx::any::AnyRow) -> Result<Review> {
    Ok(Review {
        id: row.try_get(0)?,
        question_id: row.try_get(1)?,
        author_id: row.try_get(2)?,
        content: text(row, 3)?,
        created_at: row.try_get(4)?,
        updated_at: row.try_get(5)?,
        rating: row.try_get::<Option<i64>, _>(6)?,
    })
}

pub async fn update_review(db: &Db, id: i64, content: &str) -> Result<()> {
    let result = sqlx::query("UPDATE reviews SET content = ?, updated_at = ? WHERE id = ?")
        .bind(content)
        .bind(now_ms())
        .bind(id)
        .execute(&db.pool)
        .await?;
    found(result.rows_affected(), "review")
}

pub async fn delete_review(db: &Db, id: i64) -> Result<()> {
    let mut tx = db.pool.begin().await?;
    sqlx::query("DELETE FROM comments WHERE review_id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let result = sqlx::query("DELETE FROM reviews WHERE id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    found(result.rows_affected(), "review")?;
    tx.commit().await?;
    Ok(())
}

fn found(rows_affected: u64, what: &'static str) -> Result<()> {
    if rows_affected == 0 {
        Err(DemoError::NotFound(what))
    } else {
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Comment {
    pub id: i64,
    pub author_id: i64,
    pub content: String,
    pub created_at: i64,
}

/// What a comment hangs off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parent {
    Question(i64),
    Review(i64),
}

impl Parent {
    fn column(self) -> (&'static str, i64) {
        match self {
            Parent::Question(id) => ("question_id", id),
            Parent::Review(id) => ("review_id", id),
        }
    }
}

pub async fn create_comment(db: &Db, parent: Parent, author_id: i64, content: &str) -> Result<i64> {
    match parent {
        Parent::Question(id) => get_question(db, id).await.map(drop)?,
        Parent::Review(id) => get_review(db, id).await.map(drop)?,
    }
    require_user(db, author_id).await?;
    let (column, parent_id) = parent.column();
    let sql = format!(
        "INSERT INTO comments ({column}, author_id, content, created_at) VALUES (?, ?, ?, ?)"
    );
    let query = sqlx::query(&sql)
        .bind(parent_id)
        .bind(author_id)
        .bind(content)
        .bind(now_ms());
    Ok(insert(db, query).await?)
}

/// Comments by id, after the keyset position `after`.
pub async fn list_comments(
    db: &Db,
    parent: Parent,
    after: i64,
    limit: i64,
) -> Result<Vec<Comment>> {
    let (column, parent_id) = parent.column();
    let sql = format!(
        "SELECT id, author_id, content, created_at FROM comments \
         WHERE {column} = ? AND id > ? ORDER BY id LIMIT ?"
    );
    let rows = sqlx::query(&sql)
        .bind(parent_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&db.pool)
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Comment {
                id: row.try_get(0)?,
                author_id: row.try_get(1)?,
                content: text(row, 2)?,
                created_at: row.try_get(3)?,
            })
        })
        .collect()
}

/// Likes a question once per user. Returns whether this call added the like.
pub async fn like(db: &Db, question_id: i64, user_id: i64) -> Result<bool> {
    get_question(db, question_id).await?;
    require_user(db, user_id).await?;
    let (insert_like, bump) = match db.dialect {
        Dialect::MySql => (
            "INSERT IGNORE INTO question_likes (question_id, user_id) VALUES (?, ?)",
            "INSERT INTO question_stats (question_id, like_count) VALUES (?, 1) \
             ON DUPLICATE KEY UPDATE like_count = like_count + 1",
        ),
        Dialect::Sqlite => (
            "INSERT OR IGNORE INTO question_likes (question_id, user_id) VALUES (?, ?)",
            "INSERT INTO question_stats (question_id, like_count) VALUES (?, 1) \
             ON CONFLICT (question_id) DO UPDATE SET like_count = like_count + 1",
        ),
    };
    let mut tx = db.pool.begin().await?;
    let added = sqlx::query(insert_like)
        .bind(question_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if added {
        sqlx::query(bump)
            .bind(question_id)
            .execute(&mut *tx)
            .await?;
        // The row's own count, which the search sorts by (추천순): an
        // attribute-only change for the index.
        sqlx::query("UPDATE questions SET like_count = like_count + 1 WHERE id = ?")
            .bind(question_id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(added)
}

/// Removes a user's like. Returns whether there was one.
pub async fn unlike(db: &Db, question_id: i64, user_id: i64) -> Result<bool> {
    get_question(db, question_id).await?;
    let mut tx = db.pool.begin().await?;
    let removed = sqlx::query("DELETE FROM question_likes WHERE question_id = ? AND user_id = ?")
        .bind(question_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if removed {
        sqlx::query("UPDATE question_stats SET like_count = like_count - 1 WHERE question_id = ?")
            .bind(question_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE questions SET like_count = like_count - 1 WHERE id = ?")
            .bind(question_id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(removed)
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Liked {
    pub id: i64,
    pub title: String,
    pub like_count: i64,
    pub created_at: i64,
}

/// The most liked questions; `question_stats` has an index on the count, so
/// this reads `limit` rows, not the table.
pub async fn top_liked(db: &Db, limit: i64) -> Result<Vec<Liked>> {
    let rows = sqlx::query(
        "SELECT q.id, q.title, s.like_count, q.created_at FROM question_stats s \
         JOIN questions q ON q.id = s.question_id \
         WHERE s.like_count > 0 ORDER BY s.like_count DESC, s.question_id DESC LIMIT ?",
    )
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Liked {
                id: row.try_get(0)?,
                title: text(row, 1)?,
                like_count: row.try_get(2)?,
                created_at: row.try_get(3)?,
            })
        })
        .collect()
}

/// A page of a question's reviews, by id after `after`.
pub async fn reviews_of(db: &Db, question_id: i64, after: i64, limit: i64) -> Result<Vec<Review>> {
    get_question(db, question_id).await?;
    let rows = sqlx::query(
        "SELECT id, question_id, author_id, content, created_at, updated_at, rating FROM reviews \
         WHERE question_id = ? AND id > ? ORDER BY id LIMIT ?",
    )
    .bind(question_id)
    .bind(after)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(review_from_row).collect()
}

/// A page of a user's questions, newest first, by id before `before`.
pub async fn questions_of(
    db: &Db,
    author_id: i64,
    before: i64,
    limit: i64,
) -> Result<Vec<Question>> {
    if !user_exists(db, author_id).await? {
        return Err(DemoError::NotFound("user"));
    }
    let rows = sqlx::query(
        "SELECT id, author_id, title, content, created_at, updated_at FROM questions \
         WHERE author_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
    )
    .bind(author_id)
    .bind(before)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(question_from_row).collect()
}
