-- chaja schema for MySQL 8 and MariaDB 10.11.
--
-- Timestamps are milliseconds since the Unix epoch in BIGINT columns: the
-- same queries then run unchanged on MySQL and SQLite, with no time zone in
-- play. The defaults let other programs insert rows with plain SQL.
--
-- Foreign keys never cascade: MySQL does not fire triggers for cascaded
-- deletes, and a review deleted that way would never leave the index.

CREATE TABLE users (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    created_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE questions (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    author_id BIGINT NOT NULL,
    title VARCHAR(200) NOT NULL,
    content MEDIUMTEXT NOT NULL,
    created_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)),
    updated_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)),
    KEY questions_author (author_id, id),
    CONSTRAINT questions_author_fk FOREIGN KEY (author_id) REFERENCES users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE reviews (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    question_id BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    content MEDIUMTEXT NOT NULL,
    created_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)),
    updated_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)),
    KEY reviews_question (question_id, id),
    KEY reviews_author (author_id, id),
    CONSTRAINT reviews_question_fk FOREIGN KEY (question_id) REFERENCES questions (id),
    CONSTRAINT reviews_author_fk FOREIGN KEY (author_id) REFERENCES users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Comments are not searchable, so they have no triggers.
CREATE TABLE comments (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    question_id BIGINT NULL,
    review_id BIGINT NULL,
    author_id BIGINT NOT NULL,
    content TEXT NOT NULL,
    created_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)),
    KEY comments_question (question_id, id),
    KEY comments_review (review_id, id),
    CONSTRAINT comments_question_fk FOREIGN KEY (question_id) REFERENCES questions (id),
    CONSTRAINT comments_review_fk FOREIGN KEY (review_id) REFERENCES reviews (id),
    CONSTRAINT comments_author_fk FOREIGN KEY (author_id) REFERENCES users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE question_likes (
    question_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    PRIMARY KEY (question_id, user_id),
    CONSTRAINT likes_question_fk FOREIGN KEY (question_id) REFERENCES questions (id),
    CONSTRAINT likes_user_fk FOREIGN KEY (user_id) REFERENCES users (id)
) ENGINE = InnoDB;

-- Like counts live apart from `questions` so that a like does not fire the
-- questions' update trigger and re-index the row.
CREATE TABLE question_stats (
    question_id BIGINT NOT NULL PRIMARY KEY,
    like_count BIGINT NOT NULL DEFAULT 0,
    KEY stats_likes (like_count, question_id),
    CONSTRAINT stats_question_fk FOREIGN KEY (question_id) REFERENCES questions (id)
) ENGINE = InnoDB;

-- Every change to a searchable row, in commit-ish order. The indexer tails
-- it by `seq`; triggers fill it in the writer's own transaction.
CREATE TABLE search_outbox (
    seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    entity_type VARCHAR(16) NOT NULL,
    entity_id BIGINT NOT NULL,
    op VARCHAR(8) NOT NULL,
    created_at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED))
) ENGINE = InnoDB;

CREATE TRIGGER questions_outbox_insert AFTER INSERT ON questions FOR EACH ROW
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('question', NEW.id, 'upsert');
CREATE TRIGGER questions_outbox_update AFTER UPDATE ON questions FOR EACH ROW
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('question', NEW.id, 'upsert');
CREATE TRIGGER questions_outbox_delete AFTER DELETE ON questions FOR EACH ROW
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('question', OLD.id, 'delete');
CREATE TRIGGER reviews_outbox_insert AFTER INSERT ON reviews FOR EACH ROW
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('review', NEW.id, 'upsert');
CREATE TRIGGER reviews_outbox_update AFTER UPDATE ON reviews FOR EACH ROW
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('review', NEW.id, 'upsert');
CREATE TRIGGER reviews_outbox_delete AFTER DELETE ON reviews FOR EACH ROW
    INSERT INTO search_outbox (entity_type, entity_id, op) VALUES ('review', OLD.id, 'delete');
