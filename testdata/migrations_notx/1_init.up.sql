CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent(id));
INSERT INTO parent (id, name) VALUES (1, 'a'), (2, 'b');
INSERT INTO child (id, parent_id) VALUES (10, 1), (20, 2);
