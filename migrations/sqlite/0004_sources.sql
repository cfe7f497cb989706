-- See migrations/mysql/0004_sources.sql.

DROP TRIGGER IF EXISTS questions_outbox_insert;
DROP TRIGGER IF EXISTS questions_outbox_update;
DROP TRIGGER IF EXISTS questions_outbox_delete;
DROP TRIGGER IF EXISTS reviews_outbox_insert;
DROP TRIGGER IF EXISTS reviews_outbox_update;
DROP TRIGGER IF EXISTS reviews_outbox_delete;

ALTER TABLE search_outbox ADD COLUMN entity_key TEXT NULL;
UPDATE search_outbox SET entity_key = CAST(entity_id AS TEXT);
ALTER TABLE search_outbox DROP COLUMN entity_id;

CREATE TRIGGER `chaja_question_insert` AFTER INSERT ON `questions` FOR EACH ROW BEGIN INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('question', CAST(NEW.`id` AS CHAR), 'upsert'); END;
CREATE TRIGGER `chaja_question_update` AFTER UPDATE ON `questions` FOR EACH ROW BEGIN INSERT INTO search_outbox (entity_type, entity_key, op) SELECT 'question', CAST(NEW.`id` AS CHAR), 'upsert' UNION ALL SELECT 'question', CAST(OLD.`id` AS CHAR), 'delete' WHERE CAST(OLD.`id` AS BLOB) IS NOT CAST(NEW.`id` AS BLOB); END;
CREATE TRIGGER `chaja_question_delete` AFTER DELETE ON `questions` FOR EACH ROW BEGIN INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('question', CAST(OLD.`id` AS CHAR), 'delete'); END;
CREATE TRIGGER `chaja_review_insert` AFTER INSERT ON `reviews` FOR EACH ROW BEGIN INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('review', CAST(NEW.`id` AS CHAR), 'upsert'); END;
CREATE TRIGGER `chaja_review_update` AFTER UPDATE ON `reviews` FOR EACH ROW BEGIN INSERT INTO search_outbox (entity_type, entity_key, op) SELECT 'review', CAST(NEW.`id` AS CHAR), 'upsert' UNION ALL SELECT 'review', CAST(OLD.`id` AS CHAR), 'delete' WHERE CAST(OLD.`id` AS BLOB) IS NOT CAST(NEW.`id` AS BLOB); END;
CREATE TRIGGER `chaja_review_delete` AFTER DELETE ON `reviews` FOR EACH ROW BEGIN INSERT INTO search_outbox (entity_type, entity_key, op) VALUES ('review', CAST(OLD.`id` AS CHAR), 'delete'); END;
