CREATE TABLE tasks_old (
    id         INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title      TEXT    NOT NULL,
    status     TEXT    NOT NULL DEFAULT 'open',
    created_at INTEGER NOT NULL DEFAULT (unixepoch()),
    priority   INTEGER NOT NULL DEFAULT 3
);
INSERT INTO tasks_old (id, project_id, title, status, created_at, priority)
    SELECT id, project_id, title, status, created_at, priority FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_old RENAME TO tasks;
CREATE INDEX ix_tasks_project ON tasks(project_id);
