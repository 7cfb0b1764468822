ALTER TABLE projects DROP COLUMN open_tasks;
ALTER TABLE projects DROP COLUMN rev;
