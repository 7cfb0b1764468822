CREATE TABLE t_9 (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), v TEXT);
CREATE INDEX ix_t_9_item ON t_9 (item_id);
INSERT INTO ran (version) VALUES (9);
