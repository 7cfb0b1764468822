ALTER TABLE tasks DROP COLUMN priority;
