CREATE TABLE t_18 (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), v TEXT);
CREATE INDEX ix_t_18_item ON t_18 (item_id);
INSERT INTO ran (version) VALUES (18);
