-- Attributes for ranges, sorting and facets (see the demo's sources.toml):
-- a question's like count is kept on its row too, as a site that sorts by
-- 추천순 keeps it, and a review may carry a rating of 1 to 5.
-- `question_stats` stays: the demo's "most liked" list reads its index.

ALTER TABLE questions ADD COLUMN like_count BIGINT NOT NULL DEFAULT 0;
UPDATE questions SET like_count = COALESCE(
    (SELECT s.like_count FROM question_stats s WHERE s.question_id = questions.id), 0);
ALTER TABLE reviews ADD COLUMN rating INT NULL;
