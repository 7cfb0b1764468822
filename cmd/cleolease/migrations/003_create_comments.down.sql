DROP INDEX IF EXISTS ix_comments_task;
DROP TABLE IF EXISTS comments;
