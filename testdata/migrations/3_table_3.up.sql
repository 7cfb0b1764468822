CREATE TABLE t_3 (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), v TEXT);
CREATE INDEX ix_t_3_item ON t_3 (item_id);
INSERT INTO ran (version) VALUES (3);
