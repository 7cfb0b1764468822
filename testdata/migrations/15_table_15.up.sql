CREATE TABLE t_15 (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), v TEXT);
CREATE INDEX ix_t_15_item ON t_15 (item_id);
INSERT INTO ran (version) VALUES (15);
