-- Audit log: one row per change, written in the same transaction as the change.
CREATE TABLE IF NOT EXISTS activity (
    id         INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    task_id    INTEGER REFERENCES tasks(id) ON DELETE SET NULL,
    actor      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    at         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_activity_project ON activity(project_id, at);
