DROP INDEX IF EXISTS ix_activity_project;
DROP TABLE IF EXISTS activity;
