//! The platform's writes and reads: users, questions, reviews. Writes go to
//! the database only; the indexer is woken to pick them up from the outbox.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::{ApiJson, ApiPath, AppState};
use crate::db::platform::{self, Question, Review};
use crate::error::{Error, Result};

pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_CONTENT_CHARS: usize = 20_000;
pub const MAX_NAME_CHARS: usize = 100;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/users", post(create_user))
        .route("/api/questions", post(create_question))
        .route(
            "/api/questions/{id}",
            get(get_question)
                .put(update_question)
                .delete(delete_question),
        )
        .route("/api/questions/{id}/reviews", post(create_review))
        .route(
            "/api/reviews/{id}",
            get(get_review).put(update_review).delete(delete_review),
        )
}

#[derive(Debug, Serialize)]
pub struct Created {
    pub id: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewQuestion {
    pub author_id: i64,
    pub title: String,
    pub content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionEdit {
    pub title: String,
    pub content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewReview {
    pub author_id: i64,
    pub content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewEdit {
    pub content: String,
}

#[derive(Debug, Serialize)]
pub struct QuestionBody {
    pub id: i64,
    pub author_id: i64,
    pub title: String,
    pub content: String,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Question> for QuestionBody {
    fn from(q: Question) -> Self {
        QuestionBody {
            id: q.id,
            author_id: q.author_id,
            title: q.title,
            content: q.content,
            created_at: crate::model::rfc3339(q.created_at),
            updated_at: crate::model::rfc3339(q.updated_at),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ReviewBody {
    pub id: i64,
    pub question_id: i64,
    pub author_id: i64,
    pub content: String,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Review> for ReviewBody {
    fn from(r: Review) -> Self {
        ReviewBody {
            id: r.id,
            question_id: r.question_id,
            author_id: r.author_id,
            content: r.content,
            created_at: crate::model::rfc3339(r.created_at),
            updated_at: crate::model::rfc3339(r.updated_at),
        }
    }
}

/// Rejects empty, over-long, or control-character text.
fn check_text(field: &'static str, value: &str, max: usize) -> Result<()> {
    let chars = value.chars().count();
    if value.trim().is_empty() {
        return Err(Error::bad_request(
            "invalid_field",
            format!("{field} must not be empty"),
        ));
    }
    if chars > max {
        return Err(Error::bad_request(
            "field_too_long",
            format!("{field} must be at most {max} characters"),
        ));
    }
    if value
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(Error::bad_request(
            "invalid_field",
            format!("{field} must not contain control characters"),
        ));
    }
    Ok(())
}

fn created(state: &AppState, id: i64) -> (StatusCode, Json<Created>) {
    state.mirror.wake.notify_one();
    (StatusCode::CREATED, Json(Created { id }))
}

async fn create_user(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<NewUser>,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("name", &body.name, MAX_NAME_CHARS)?;
    let id = platform::create_user(&state.db, &body.name).await?;
    Ok((StatusCode::CREATED, Json(Created { id })))
}

async fn create_question(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<NewQuestion>,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("title", &body.title, MAX_TITLE_CHARS)?;
    check_text("content", &body.content, MAX_CONTENT_CHARS)?;
    let id =
        platform::create_question(&state.db, body.author_id, &body.title, &body.content).await?;
    Ok(created(&state, id))
}

async fn get_question(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<QuestionBody>> {
    Ok(Json(platform::get_question(&state.db, id).await?.into()))
}

async fn update_question(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<QuestionEdit>,
) -> Result<StatusCode> {
    check_text("title", &body.title, MAX_TITLE_CHARS)?;
    check_text("content", &body.content, MAX_CONTENT_CHARS)?;
    platform::update_question(&state.db, id, &body.title, &body.content).await?;
    state.mirror.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_question(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<StatusCode> {
    platform::delete_question(&state.db, id).await?;
    state.mirror.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

async fn create_review(
    State(state): State<AppState>,
    ApiPath(question_id): ApiPath<i64>,
    ApiJson(body): ApiJson<NewReview>,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("content", &body.content, MAX_CONTENT_CHARS)?;
    let id = platform::create_review(&state.db, question_id, body.author_id, &body.content).await?;
    Ok(created(&state, id))
}

async fn get_review(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<ReviewBody>> {
    Ok(Json(platform::get_review(&state.db, id).await?.into()))
}

async fn update_review(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<ReviewEdit>,
) -> Result<StatusCode> {
    check_text("content", &body.content, MAX_CONTENT_CHARS)?;
    platform::update_review(&state.db, id, &body.content).await?;
    state.mirror.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_review(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<StatusCode> {
    platform::delete_review(&state.db, id).await?;
    state.mirror.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}
