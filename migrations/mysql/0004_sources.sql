-- The demo platform becomes two configured sources (see `src/sources.rs`):
-- the outbox keeps a row's key as text (`entity_key`), so that tables with
-- string keys can be mirrored too, and the triggers are the ones `chaja
-- install` writes for the demo's sources (`src/install.rs`).

DROP TRIGGER IF EXISTS questions_outbox_insert;
DROP TRIGGER IF EXISTS questions_outbox_update;
DROP TRIGGER IF EXISTS questions_outbox_delete;
DROP TRIGGER IF EXISTS reviews_outbox_insert;
DROP TRIGGER IF EXISTS reviews_outbox_update;
DROP TRIGGER IF EXISTS reviews_outbox_delete;

ALTER TABLE search_outbox
    MODIFY entity_type VARCHAR(64) NOT NULL,
    ADD COLUMN entity_key VARCHAR(512) CHARACTER SET utf8mb4 NULL AFTER entity_type;
UPDATE search_outbox SET entity_key = CAST(entity_id AS CHAR);
ALTER TABLE search_outbox DROP COLUMN entity_id;

CREATE TRIGGER `chaja_question_insert` AFTER INSERT ON `questions` FOR EACH ROW INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('question', CAST(NEW.`id` AS CHAR CHARACTER SET utf8mb4), 'upsert');
CREATE TRIGGER `chaja_question_update` AFTER UPDATE ON `questions` FOR EACH ROW INSERT INTO search_outbox (entity_type, entity_key, op) SELECT 'question', CAST(NEW.`id` AS CHAR CHARACTER SET utf8mb4), 'upsert' UNION ALL SELECT 'question', CAST(OLD.`id` AS CHAR CHARACTER SET utf8mb4), 'delete' FROM DUAL WHERE NOT (CAST(OLD.`id` AS BINARY) <=> CAST(NEW.`id` AS BINARY));
CREATE TRIGGER `chaja_question_delete` AFTER DELETE ON `questions` FOR EACH ROW INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('question', CAST(OLD.`id` AS CHAR CHARACTER SET utf8mb4), 'delete');
CREATE TRIGGER `chaja_review_insert` AFTER INSERT ON `reviews` FOR EACH ROW INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('review', CAST(NEW.`id` AS CHAR CHARACTER SET utf8mb4), 'upsert');
CREATE TRIGGER `chaja_review_update` AFTER UPDATE ON `reviews` FOR EACH ROW INSERT INTO search_outbox (entity_type, entity_key, op) SELECT 'review', CAST(NEW.`id` AS CHAR CHARACTER SET utf8mb4), 'upsert' UNION ALL SELECT 'review', CAST(OLD.`id` AS CHAR CHARACTER SET utf8mb4), 'delete' FROM DUAL WHERE NOT (CAST(OLD.`id` AS BINARY) <=> CAST(NEW.`id` AS BINARY));
CREATE TRIGGER `chaja_review_delete` AFTER DELETE ON `reviews` FOR EACH ROW INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('review', CAST(OLD.`id` AS CHAR CHARACTER SET utf8mb4), 'delete');
