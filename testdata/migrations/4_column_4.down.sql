DELETE FROM items WHERE name = 'item 4';
ALTER TABLE items DROP COLUMN c_4;
DELETE FROM ran WHERE version = 4;
