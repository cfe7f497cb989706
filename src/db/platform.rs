//! The platform's own rows: users, questions, reviews.
//!
//! Writes here never touch the index: the triggers put each change in the
//! outbox in the same transaction, and the indexer takes it from there.

use serde::Serialize;
use sqlx::Row;

use super::{insert, now_ms, text, Db};
use crate::error::{Error, Result};

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
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn create_user(db: &Db, name: &str) -> Result<i64> {
    let query = sqlx::query("INSERT INTO users (name, created_at) VALUES (?, ?)")
        .bind(name)
        .bind(now_ms());
    insert(db, query).await
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
        Err(Error::Unprocessable(format!("author {id} does not exist")))
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
    insert(db, query).await
}

pub async fn get_question(db: &Db, id: i64) -> Result<Question> {
    let row = sqlx::query(
        "SELECT id, author_id, title, content, created_at, updated_at FROM questions WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    .ok_or(Error::NotFound("question"))?;
    Ok(Question {
        id: row.try_get(0)?,
        author_id: row.try_get(1)?,
        title: text(&row, 2)?,
        content: text(&row, 3)?,
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
) -> Result<i64> {
    get_question(db, question_id).await?;
    require_user(db, author_id).await?;
    let now = now_ms();
    let query = sqlx::query(
        "INSERT INTO reviews (question_id, author_id, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(question_id)
    .bind(author_id)
    .bind(content)
    .bind(now)
    .bind(now)
    ;
    insert(db, query).await
}

pub async fn get_review(db: &Db, id: i64) -> Result<Review> {
    let row = sqlx::query(
        "SELECT id, question_id, author_id, content, created_at, updated_at FROM reviews WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    .ok_or(Error::NotFound("review"))?;
    Ok(Review {
        id: row.try_get(0)?,
        question_id: row.try_get(1)?,
        author_id: row.try_get(2)?,
        content: text(&row, 3)?,
        created_at: row.try_get(4)?,
        updated_at: row.try_get(5)?,
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
        Err(Error::NotFound(what))
    } else {
        Ok(())
    }
}
