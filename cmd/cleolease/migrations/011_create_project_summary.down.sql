DROP VIEW IF EXISTS project_summary;
