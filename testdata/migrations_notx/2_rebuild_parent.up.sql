-- The documented way to change a table's definition in SQLite: foreign key
-- enforcement must be off while the referenced table is dropped and
-- renamed, and that PRAGMA is a no-op inside a transaction, so this file
-- runs without the transaction wrapper (_migrations_no_tx_wrap=true) and
-- manages its own.
PRAGMA foreign_keys=OFF;
BEGIN;
CREATE TABLE parent_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, created INTEGER NOT NULL DEFAULT 0);
INSERT INTO parent_new (id, name) SELECT id, name FROM parent;
DROP TABLE parent;
ALTER TABLE parent_new RENAME TO parent;
COMMIT;
PRAGMA foreign_keys=ON;
