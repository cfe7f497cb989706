//! The platform flow load tests drive: users, questions, reviews, comments,
//! likes, top liked, and keyset-paged lists. Writes go to the database only;
//! the indexer is woken to pick them up from the outbox.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use std::sync::Arc;

use chaja_http::{ApiError as Error, ApiJson, ApiPath, ApiQuery, ErrorBody, InputLimits};
use chaja_store::Db;
use tokio::sync::Notify;

use crate::db::{self as platform, Comment, Liked, Parent, Question, Review};

type Result<T, E = Error> = std::result::Result<T, E>;

/// Users' names are not configurable: nothing searches them.
pub const MAX_NAME_CHARS: usize = 100;

/// What the demo's routes use: the database, the indexer's wake-up call
/// (a write is picked up at once instead of at the next poll) and the
/// configured write limits.
#[derive(Clone)]
pub struct DemoState {
    pub db: Db,
    pub wake: Arc<Notify>,
    pub input: InputLimits,
}

/// The demo's routes, given their state: they merge into any router.
pub fn router<S: Clone + Send + Sync + 'static>(state: DemoState) -> OpenApiRouter<S> {
    routes().with_state(state)
}

fn routes() -> OpenApiRouter<DemoState> {
    OpenApiRouter::new()
        // The question form, which shows similar questions as one types.
        .route(
            "/ask",
            axum::routing::get(|| async { chaja_http::web::page(include_str!("web/ask.html")) }),
        )
        .route(
            "/demo/ask.js",
            axum::routing::get(|| async {
                chaja_http::web::javascript(include_str!("web/ask.js"))
            }),
        )
        .routes(routes!(create_user))
        .routes(routes!(create_question))
        .routes(routes!(get_question, update_question, delete_question))
        .routes(routes!(list_reviews, create_review))
        .routes(routes!(get_review, update_review, delete_review))
        .routes(routes!(list_question_comments, comment_question))
        .routes(routes!(list_review_comments, comment_review))
        .routes(routes!(like, unlike))
        .routes(routes!(top_liked))
        .routes(routes!(list_user_questions))
}

pub const MAX_PAGE: i64 = 100;

/// Keyset paging: `after` (or `before` for newest-first lists) is the last id
/// of the previous page; `next` in the answer is the value for the next one.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    pub after: Option<i64>,
    pub before: Option<i64>,
    /// 1 to 100; default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

impl PageParams {
    fn limit(&self) -> Result<i64> {
        let limit = self.limit.unwrap_or(20);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(Error::bad_request(
                "invalid_limit",
                format!("limit must be between 1 and {MAX_PAGE}"),
            ));
        }
        Ok(limit)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<i64>,
}

fn page<T, B>(rows: Vec<T>, limit: i64, id: impl Fn(&T) -> i64) -> Page<B>
where
    B: From<T>,
{
    let next = match rows.last() {
        Some(last) if rows.len() as i64 == limit => Some(id(last)),
        _ => None,
    };
    Page {
        items: rows.into_iter().map(B::from).collect(),
        next,
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewComment {
    /// An existing user (422 otherwise).
    #[schema(minimum = 1, example = 1)]
    pub author_id: i64,
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub content: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LikeBody {
    /// An existing user (422 otherwise).
    #[schema(minimum = 1, example = 1)]
    pub user_id: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CommentBody {
    pub id: i64,
    pub author_id: i64,
    pub content: String,
    pub created_at: String,
}

impl From<Comment> for CommentBody {
    fn from(c: Comment) -> Self {
        CommentBody {
            id: c.id,
            author_id: c.author_id,
            content: c.content,
            created_at: chaja_core::model::rfc3339(c.created_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LikedBody {
    pub id: i64,
    pub title: String,
    pub like_count: i64,
    pub created_at: String,
}

impl From<Liked> for LikedBody {
    fn from(l: Liked) -> Self {
        LikedBody {
            id: l.id,
            title: l.title,
            like_count: l.like_count,
            created_at: chaja_core::model::rfc3339(l.created_at),
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TopParams {
    /// 1 to 100; default 10.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Created {
    pub id: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewQuestion {
    /// An existing user (422 otherwise).
    #[schema(minimum = 1, example = 1)]
    pub author_id: i64,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub title: String,
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub content: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionEdit {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub title: String,
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub content: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewReview {
    /// An existing user (422 otherwise).
    #[schema(minimum = 1, example = 1)]
    pub author_id: i64,
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub content: String,
    /// ★1 to ★5; absent for a review without one.
    #[schema(minimum = 1, maximum = 5, example = 5)]
    pub rating: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewEdit {
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub content: String,
}

#[derive(Debug, Serialize, ToSchema)]
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
            created_at: chaja_core::model::rfc3339(q.created_at),
            updated_at: chaja_core::model::rfc3339(q.updated_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewBody {
    pub id: i64,
    pub question_id: i64,
    pub author_id: i64,
    pub content: String,
    /// ★1 to ★5, or null.
    pub rating: Option<i64>,
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
            rating: r.rating,
            created_at: chaja_core::model::rfc3339(r.created_at),
            updated_at: chaja_core::model::rfc3339(r.updated_at),
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

fn created(state: &DemoState, id: i64) -> (StatusCode, Json<Created>) {
    state.wake.notify_one();
    (StatusCode::CREATED, Json(Created { id }))
}

#[utoipa::path(post, path = "/api/users", tag = "platform", request_body = NewUser, responses((status = 201, body = Created), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn create_user(
    State(state): State<DemoState>,
    ApiJson(body): ApiJson<NewUser>,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("name", &body.name, MAX_NAME_CHARS)?;
    let id = platform::create_user(&state.db, &body.name).await?;
    Ok((StatusCode::CREATED, Json(Created { id })))
}

#[utoipa::path(post, path = "/api/questions", tag = "platform", request_body = NewQuestion, responses((status = 201, body = Created), (status = 422, description = "unknown author", body = ErrorBody), (status = 413, description = "body over 64 KiB", body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn create_question(
    State(state): State<DemoState>,
    ApiJson(body): ApiJson<NewQuestion>,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("title", &body.title, state.input.max_title_chars)?;
    check_text("content", &body.content, state.input.max_content_chars)?;
    let id =
        platform::create_question(&state.db, body.author_id, &body.title, &body.content).await?;
    Ok(created(&state, id))
}

#[utoipa::path(get, path = "/api/questions/{id}", tag = "platform", params(("id" = i64, Path, description = "row id")), responses((status = 200, body = QuestionBody), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn get_question(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<QuestionBody>> {
    Ok(Json(platform::get_question(&state.db, id).await?.into()))
}

#[utoipa::path(put, path = "/api/questions/{id}", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = QuestionEdit, responses((status = 204, description = "updated"), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn update_question(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<QuestionEdit>,
) -> Result<StatusCode> {
    check_text("title", &body.title, state.input.max_title_chars)?;
    check_text("content", &body.content, state.input.max_content_chars)?;
    platform::update_question(&state.db, id, &body.title, &body.content).await?;
    state.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/questions/{id}", tag = "platform", params(("id" = i64, Path, description = "row id")), responses((status = 204, description = "deleted with its reviews, comments and likes"), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn delete_question(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<StatusCode> {
    platform::delete_question(&state.db, id).await?;
    state.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/questions/{id}/reviews", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = NewReview, responses((status = 201, body = Created), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn create_review(
    State(state): State<DemoState>,
    ApiPath(question_id): ApiPath<i64>,
    ApiJson(body): ApiJson<NewReview>,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("content", &body.content, state.input.max_content_chars)?;
    if body.rating.is_some_and(|r| !(1..=5).contains(&r)) {
        return Err(Error::bad_request(
            "invalid_rating",
            "rating must be between 1 and 5",
        ));
    }
    let id = platform::create_review(
        &state.db,
        question_id,
        body.author_id,
        &body.content,
        body.rating,
    )
    .await?;
    Ok(created(&state, id))
}

#[utoipa::path(get, path = "/api/reviews/{id}", tag = "platform", params(("id" = i64, Path, description = "row id")), responses((status = 200, body = ReviewBody), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn get_review(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<ReviewBody>> {
    Ok(Json(platform::get_review(&state.db, id).await?.into()))
}

#[utoipa::path(put, path = "/api/reviews/{id}", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = ReviewEdit, responses((status = 204, description = "updated"), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn update_review(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<ReviewEdit>,
) -> Result<StatusCode> {
    check_text("content", &body.content, state.input.max_content_chars)?;
    platform::update_review(&state.db, id, &body.content).await?;
    state.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/reviews/{id}", tag = "platform", params(("id" = i64, Path, description = "row id")), responses((status = 204, description = "deleted"), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn delete_review(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<StatusCode> {
    platform::delete_review(&state.db, id).await?;
    state.wake.notify_one();
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/questions/{id}/reviews", tag = "platform", params(("id" = i64, Path, description = "row id"), PageParams), responses((status = 200, body = Page<ReviewBody>), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn list_reviews(
    State(state): State<DemoState>,
    ApiPath(question_id): ApiPath<i64>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> Result<Json<Page<ReviewBody>>> {
    let limit = params.limit()?;
    let rows =
        platform::reviews_of(&state.db, question_id, params.after.unwrap_or(0), limit).await?;
    Ok(Json(page(rows, limit, |r| r.id)))
}

#[utoipa::path(get, path = "/api/users/{id}/questions", tag = "platform", params(("id" = i64, Path, description = "row id"), PageParams), responses((status = 200, body = Page<QuestionBody>), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn list_user_questions(
    State(state): State<DemoState>,
    ApiPath(user_id): ApiPath<i64>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> Result<Json<Page<QuestionBody>>> {
    let limit = params.limit()?;
    let before = params.before.unwrap_or(i64::MAX);
    let rows = platform::questions_of(&state.db, user_id, before, limit).await?;
    Ok(Json(page(rows, limit, |q| q.id)))
}

async fn add_comment(
    state: &DemoState,
    parent: Parent,
    body: NewComment,
) -> Result<(StatusCode, Json<Created>)> {
    check_text("content", &body.content, state.input.max_content_chars)?;
    let id = platform::create_comment(&state.db, parent, body.author_id, &body.content).await?;
    Ok((StatusCode::CREATED, Json(Created { id })))
}

#[utoipa::path(post, path = "/api/questions/{id}/comments", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = NewComment, responses((status = 201, body = Created), (status = 404, body = ErrorBody), (status = 422, description = "unknown author", body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn comment_question(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<NewComment>,
) -> Result<(StatusCode, Json<Created>)> {
    add_comment(&state, Parent::Question(id), body).await
}

#[utoipa::path(post, path = "/api/reviews/{id}/comments", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = NewComment, responses((status = 201, body = Created), (status = 404, body = ErrorBody), (status = 422, description = "unknown author", body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn comment_review(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<NewComment>,
) -> Result<(StatusCode, Json<Created>)> {
    add_comment(&state, Parent::Review(id), body).await
}

async fn comments(
    state: &DemoState,
    parent: Parent,
    params: PageParams,
) -> Result<Json<Page<CommentBody>>> {
    let limit = params.limit()?;
    let rows = platform::list_comments(&state.db, parent, params.after.unwrap_or(0), limit).await?;
    Ok(Json(page(rows, limit, |c| c.id)))
}

#[utoipa::path(get, path = "/api/questions/{id}/comments", tag = "platform", params(("id" = i64, Path, description = "row id"), PageParams), responses((status = 200, body = Page<CommentBody>), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn list_question_comments(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> Result<Json<Page<CommentBody>>> {
    comments(&state, Parent::Question(id), params).await
}

#[utoipa::path(get, path = "/api/reviews/{id}/comments", tag = "platform", params(("id" = i64, Path, description = "row id"), PageParams), responses((status = 200, body = Page<CommentBody>), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn list_review_comments(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(params): ApiQuery<PageParams>,
) -> Result<Json<Page<CommentBody>>> {
    comments(&state, Parent::Review(id), params).await
}

/// Idempotent: liking twice is one like.
#[utoipa::path(post, path = "/api/questions/{id}/like", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = LikeBody, responses((status = 204, description = "liked (idempotent per user)"), (status = 404, body = ErrorBody), (status = 422, description = "unknown user", body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn like(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<LikeBody>,
) -> Result<StatusCode> {
    platform::like(&state.db, id, body.user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/questions/{id}/like", tag = "platform", params(("id" = i64, Path, description = "row id")), request_body = LikeBody, responses((status = 204, description = "not liked (idempotent)"), (status = 404, body = ErrorBody), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn unlike(
    State(state): State<DemoState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<LikeBody>,
) -> Result<StatusCode> {
    platform::unlike(&state.db, id, body.user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/questions/top-liked", tag = "platform", params(TopParams), responses((status = 200, body = Vec<LikedBody>), (status = 400, description = "bad input", body = ErrorBody), (status = 503, description = "database unavailable", body = ErrorBody)))]
async fn top_liked(
    State(state): State<DemoState>,
    ApiQuery(params): ApiQuery<TopParams>,
) -> Result<Json<Vec<LikedBody>>> {
    let limit = params.limit.unwrap_or(10);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(Error::bad_request(
            "invalid_limit",
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    let rows = platform::top_liked(&state.db, limit).await?;
    Ok(Json(rows.into_iter().map(LikedBody::from).collect()))
}
