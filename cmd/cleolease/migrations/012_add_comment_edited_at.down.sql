ALTER TABLE comments DROP COLUMN edited_at;
