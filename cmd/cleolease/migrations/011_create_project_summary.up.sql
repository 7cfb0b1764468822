CREATE VIEW IF NOT EXISTS project_summary AS
    SELECT p.id, p.name, p.rev, p.open_tasks,
           (SELECT count(*) FROM tasks t WHERE t.project_id = p.id) AS tasks,
           (SELECT count(*) FROM activity a WHERE a.project_id = p.id) AS changes
    FROM projects p;
