DELETE FROM items WHERE name = 'item 16';
ALTER TABLE items DROP COLUMN c_16;
DELETE FROM ran WHERE version = 16;
