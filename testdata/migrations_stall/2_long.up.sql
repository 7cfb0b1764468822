-- A long migration: cleo_stall() is a function the test processes register
-- with a ConnectHook. In the process the test kills it announces itself and
-- never returns; elsewhere it returns at once.
INSERT INTO data (v) VALUES ('before the stall');
INSERT INTO ran (version) VALUES (2);
SELECT cleo_stall();
INSERT INTO data (v) VALUES ('after the stall');
