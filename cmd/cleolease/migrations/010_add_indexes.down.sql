DROP INDEX IF EXISTS ix_comments_author;
DROP INDEX IF EXISTS ix_tasks_priority;
