//! The sites' own tables the tests attach chaja to, written the way their
//! Spring/JPA applications create them, in both SQL dialects, each with
//! the `[[source]]` config that mirrors it.
//!
//! A test whose table differs on purpose (a string key, a key that is not
//! valid UTF-8, the column type under test) keeps it inline and says why.

/// A board: posts with a view counter and a like count on the row,
/// soft-deleted by a flag.
pub mod board {
    use crate::helpers::Store;

    pub fn schema(store: Store) -> &'static [&'static str] {
        match store {
            Store::MySql => &["CREATE TABLE post (
            id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            member_id BIGINT NOT NULL,
            title VARCHAR(255) NOT NULL,
            body TEXT NOT NULL,
            view_count INT NOT NULL DEFAULT 0,
            like_count INT NOT NULL DEFAULT 0,
            is_deleted BIT(1) NOT NULL DEFAULT b'0',
            created_at DATETIME(6) NOT NULL,
            updated_at DATETIME(6) NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"],
            Store::Sqlite => &["CREATE TABLE post (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            member_id BIGINT NOT NULL,
            title VARCHAR(255) NOT NULL,
            body TEXT NOT NULL,
            view_count INT NOT NULL DEFAULT 0,
            like_count INT NOT NULL DEFAULT 0,
            is_deleted INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NULL
        )"],
        }
    }

    /// The board's source, followed by `$line`s (its attributes).
    macro_rules! post_source {
        ($($line:literal),+) => {
            concat!(
                r#"
[[source]]
name = "post"
table = "post"
id = "id"
created_at = "created_at"
fields = ["title", "body"]
filter = "is_deleted = 0"
"#,
                $($line, "\n"),+
            )
        };
    }

    /// The board, its author returned.
    pub const CONFIG: &str = post_source!(r#"attributes = ["member_id"]"#);

    /// The board with its like count returned, filtered and sorted on.
    pub const CONFIG_WITH_LIKES: &str = post_source!(
        r#"attributes = ["member_id", "like_count"]"#,
        r#"numeric = ["like_count"]"#,
        r#"sortable = ["like_count"]"#
    );
}

/// A shop's reviews: a rating that may be missing, a like count and a
/// category to facet, filter and sort on, soft-deleted by a timestamp.
pub mod review {
    use crate::helpers::Store;

    pub fn schema(store: Store) -> &'static [&'static str] {
        match store {
            Store::MySql => &["CREATE TABLE review (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                product_id BIGINT NOT NULL,
                rating TINYINT NULL,
                like_count INT NOT NULL DEFAULT 0,
                category VARCHAR(20) NULL,
                body TEXT NOT NULL,
                created_at DATETIME(6) NOT NULL,
                deleted_at DATETIME(6) NULL
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"],
            Store::Sqlite => &["CREATE TABLE review (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                product_id BIGINT NOT NULL,
                rating INTEGER NULL,
                like_count INTEGER NOT NULL DEFAULT 0,
                category TEXT NULL,
                body TEXT NOT NULL,
                created_at TEXT NOT NULL,
                deleted_at TEXT NULL
            )"],
        }
    }

    pub const CONFIG: &str = r#"
[[source]]
name = "review"
table = "review"
id = "id"
created_at = "created_at"
fields = ["body"]
filter = "deleted_at IS NULL"
attributes = ["product_id", "rating", "like_count", "category"]
numeric = ["rating"]
facets = ["rating", "category"]
sortable = ["like_count"]
"#;
}

/// A Q&A site's two tables: questions are soft-deleted and can be hidden
/// by status; answers belong to a question and a member.
pub mod qa {
    use crate::helpers::Store;

    pub fn schema(store: Store) -> &'static [&'static str] {
        match store {
            Store::MySql => &[
                "CREATE TABLE question (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                member_id BIGINT NOT NULL,
                title VARCHAR(255) NOT NULL,
                body TEXT NOT NULL,
                status VARCHAR(20) NOT NULL DEFAULT 'PUBLIC',
                created_at DATETIME(6) NOT NULL,
                deleted_at DATETIME(6) NULL
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
                "CREATE TABLE answer (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                question_id BIGINT NOT NULL,
                member_id BIGINT NOT NULL,
                body TEXT NOT NULL,
                created_at DATETIME(6) NOT NULL,
                KEY FK_answer_question (question_id),
                CONSTRAINT FK_answer_question FOREIGN KEY (question_id) REFERENCES question (id)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            ],
            Store::Sqlite => &[
                "CREATE TABLE question (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                member_id BIGINT NOT NULL,
                title VARCHAR(255) NOT NULL,
                body TEXT NOT NULL,
                status VARCHAR(20) NOT NULL DEFAULT 'PUBLIC',
                created_at TEXT NOT NULL,
                deleted_at TEXT NULL
            )",
                "CREATE TABLE answer (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                question_id BIGINT NOT NULL REFERENCES question (id),
                member_id BIGINT NOT NULL,
                body TEXT NOT NULL,
                created_at TEXT NOT NULL
            )",
            ],
        }
    }

    pub const CONFIG: &str = r#"
[[source]]
name = "question"
table = "question"
id = "id"
created_at = "created_at"
fields = ["title", "body"]
filter = "deleted_at IS NULL AND status = 'PUBLIC'"
attributes = ["member_id"]

[[source]]
name = "answer"
table = "answer"
id = "id"
created_at = "created_at"
fields = ["body"]
attributes = ["member_id", "question_id"]
"#;
}
