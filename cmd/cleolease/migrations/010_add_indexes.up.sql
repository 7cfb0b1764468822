CREATE INDEX IF NOT EXISTS ix_tasks_priority ON tasks(project_id, priority) WHERE status <> 'done';
CREATE INDEX IF NOT EXISTS ix_comments_author ON comments(author);
