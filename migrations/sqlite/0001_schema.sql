-- chaja schema for SQLite, the embedded default. Same tables, columns and
-- triggers as migrations/mysql; see the comments there.
-- AUTOINCREMENT keeps ids and outbox positions from ever being reused.

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
);

CREATE TABLE questions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    author_id INTEGER NOT NULL REFERENCES users (id),
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
);
CREATE INDEX questions_author ON questions (author_id, id);

CREATE TABLE reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    question_id INTEGER NOT NULL REFERENCES questions (id),
    author_id INTEGER NOT NULL REFERENCES users (id),
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
);
CREATE INDEX reviews_question ON reviews (question_id, id);
CREATE INDEX reviews_author ON reviews (author_id, id);

CREATE TABLE comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    question_id INTEGER NULL REFERENCES questions (id),
    review_id INTEGER NULL REFERENCES reviews (id),
    author_id INTEGER NOT NULL REFERENCES users (id),
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
);
CREATE INDEX comments_question ON comments (question_id, id);
CREATE INDEX comments_review ON comments (review_id, id);

CREATE TABLE question_likes (
    question_id INTEGER NOT NULL REFERENCES questions (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    PRIMARY KEY (question_id, user_id)
);

CREATE TABLE question_stats (
    question_id INTEGER PRIMARY KEY REFERENCES questions (id),
    like_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX stats_likes ON question_stats (like_count, question_id);

CREATE TABLE search_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_type TEXT NOT NULL,
    entity_id INTEGER NOT NULL,
    op TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
);

CREATE TRIGGER questions_outbox_insert AFTER INSERT ON questions BEGIN
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('question', NEW.id, 'upsert');
END;
CREATE TRIGGER questions_outbox_update AFTER UPDATE ON questions BEGIN
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('question', NEW.id, 'upsert');
END;
CREATE TRIGGER questions_outbox_delete AFTER DELETE ON questions BEGIN
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('question', OLD.id, 'delete');
END;
CREATE TRIGGER reviews_outbox_insert AFTER INSERT ON reviews BEGIN
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('review', NEW.id, 'upsert');
END;
CREATE TRIGGER reviews_outbox_update AFTER UPDATE ON reviews BEGIN
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('review', NEW.id, 'upsert');
END;
CREATE TRIGGER reviews_outbox_delete AFTER DELETE ON reviews BEGIN
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('review', OLD.id, 'delete');
END;
