-- Denormalised counters the UI shows without counting rows.
ALTER TABLE projects ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN open_tasks INTEGER NOT NULL DEFAULT 0;
