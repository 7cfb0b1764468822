DELETE FROM items WHERE name = 'item 10';
ALTER TABLE items DROP COLUMN c_10;
DELETE FROM ran WHERE version = 10;
