-- See migrations/mysql/0005_attributes.sql.

ALTER TABLE questions ADD COLUMN like_count INTEGER NOT NULL DEFAULT 0;
UPDATE questions SET like_count = COALESCE(
    (SELECT s.like_count FROM question_stats s WHERE s.question_id = questions.id), 0);
ALTER TABLE reviews ADD COLUMN rating INTEGER NULL;
