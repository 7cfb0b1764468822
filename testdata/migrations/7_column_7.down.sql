DELETE FROM items WHERE name = 'item 7';
ALTER TABLE items DROP COLUMN c_7;
DELETE FROM ran WHERE version = 7;
