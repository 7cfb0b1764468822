-- Table rebuild (https://www.sqlite.org/lang_altertable.html#otheralter):
-- SQLite cannot add a CHECK constraint or change a column in place, so
-- tasks is copied into a new table with the constraint, an updated_at
-- column and a comment counter, then swapped in.
CREATE TABLE tasks_new (
    id            INTEGER PRIMARY KEY,
    project_id    INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title         TEXT    NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    status        TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'doing', 'done')),
    priority      INTEGER NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 9),
    comment_count INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL DEFAULT (unixepoch()),
    updated_at    INTEGER NOT NULL DEFAULT (unixepoch())
);
INSERT INTO tasks_new (id, project_id, title, status, priority, created_at, updated_at)
    SELECT id, project_id, title, status, priority, created_at, created_at FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
CREATE INDEX ix_tasks_project_status ON tasks(project_id, status);
