CREATE TABLE t_6 (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), v TEXT);
CREATE INDEX ix_t_6_item ON t_6 (item_id);
INSERT INTO ran (version) VALUES (6);
