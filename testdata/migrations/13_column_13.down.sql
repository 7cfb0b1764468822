DELETE FROM items WHERE name = 'item 13';
ALTER TABLE items DROP COLUMN c_13;
DELETE FROM ran WHERE version = 13;
