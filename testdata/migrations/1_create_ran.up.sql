-- ran logs every run of every migration body: a body that ran twice shows
-- up as a duplicate row (and its CREATE TABLE would fail).
CREATE TABLE ran (version INTEGER NOT NULL);
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO ran (version) VALUES (1);
