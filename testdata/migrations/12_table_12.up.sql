CREATE TABLE t_12 (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), v TEXT);
CREATE INDEX ix_t_12_item ON t_12 (item_id);
INSERT INTO ran (version) VALUES (12);
