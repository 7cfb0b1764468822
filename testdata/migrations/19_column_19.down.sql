DELETE FROM items WHERE name = 'item 19';
ALTER TABLE items DROP COLUMN c_19;
DELETE FROM ran WHERE version = 19;
