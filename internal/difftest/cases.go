package difftest

import (
	"database/sql"
	"strings"
	"time"
)

// Time is a time value of the sequences, with nanoseconds.
var Time = time.Date(2026, 12, 1, 15, 4, 5, 123456789, time.UTC)

// Cases are the differential sequences every base runs, by name: the calls
// issue 13 found different, their neighbours, and the behaviour of
// go-sqlite3's own tests that use only database/sql (sqlite3_test.go:
// empty and comment-only queries, argument errors, blobs, NULLs, time
// values, cancellation). Each call returns a new map.
func Cases() map[string][]Op {
	cases := map[string][]Op{
		"empty and comment-only text": {
			Seq("exec", "-- just a comment"), Seq("exec", ""), Seq("exec", "   "), Seq("exec", "/* x */"),
			Seq("query", ""), Seq("query", "-- c"), Seq("queryrow", "/* x */"), Seq("exec", ";"),
			Seq("exec", "-- c", 1), Seq("query", "", 1),
		},
		"missing arguments, first time and later": {
			Seq("exec", "INSERT INTO t(a) VALUES (?)"), Seq("exec", "INSERT INTO t(a) VALUES (?)"),
			Seq("query", "INSERT INTO t(a) VALUES (?) RETURNING a"), Seq("queryrow", "SELECT ?, ?", 1),
			Seq("exec", "INSERT INTO t(a, b) VALUES (?, ?)", 1), Seq("exec", "INSERT INTO t(a, b) VALUES (?, ?)", 1),
		},
		"extra arguments, first time and later": {
			Seq("exec", "INSERT INTO t(a) VALUES (?+0)", 1, 2), Seq("exec", "INSERT INTO t(a) VALUES (?+0)", 3, 4),
			Seq("query", "INSERT INTO t(a) VALUES (?) RETURNING a", 5, 6), Seq("query", "SELECT ?", 7, 8),
		},
		"named arguments": {
			Seq("exec", "INSERT INTO t(a, b) VALUES (:a, :b)", sql.Named("a", 1), sql.Named("b", "x")),
			Seq("exec", "INSERT INTO t(a, b) VALUES (@a, $b)", sql.Named("a", 2), sql.Named("b", "y")),
			Seq("exec", "INSERT INTO t(a, b) VALUES (:a, :b)", sql.Named("a", 3)),
			Seq("exec", "INSERT INTO t(a, b) VALUES (:a, :b)", sql.Named("zz", 4), sql.Named("b", "z")),
			Seq("query", "SELECT a, b FROM t WHERE a = :a", sql.Named("a", 1)),
			Seq("exec", "INSERT INTO t(a, b) VALUES (?, :b)", 5, sql.Named("b", "mixed")),
		},
		"blobs, NULLs, empty values": {
			Seq("exec", "INSERT INTO t(a, c) VALUES (?, ?)", 1, []byte{}),
			Seq("exec", "INSERT INTO t(a, c) VALUES (?, ?)", 2, []byte(nil)),
			Seq("exec", "INSERT INTO t(a, c) VALUES (?, ?)", 3, []byte("\x00\xff")),
			Seq("exec", "INSERT INTO t(a, b) VALUES (?, ?)", 4, nil),
			Seq("exec", "INSERT INTO t(a, b) VALUES (?, ?)", 5, ""),
			Seq("query", "SELECT a, b, c, typeof(c) FROM t ORDER BY a"),
			Seq("query", "INSERT INTO t(a, c) VALUES (6, x'') RETURNING c, typeof(c)"),
			Seq("queryrow", "SELECT c FROM t WHERE a = 1"),
		},
		"time values": {
			Seq("exec", "INSERT INTO t(a, d) VALUES (?, ?)", 1, Time),
			Seq("exec", "INSERT INTO t(a, d) VALUES (?, ?)", 2, Time.In(time.FixedZone("X", 3600))),
			Seq("exec", "INSERT INTO t(a, d) VALUES (?, '2026-12-01 10:00:00')", 3),
			Seq("query", "SELECT a, d FROM t ORDER BY a"),
			Seq("query", "INSERT INTO t(a, d) VALUES (4, ?) RETURNING d", Time),
			Seq("queryrow", "SELECT d, a FROM t WHERE a = 1"),
		},
		"other types": {
			Seq("exec", "INSERT INTO t(a, b, e) VALUES (?, ?, ?)", int64(1), true, 1.5),
			Seq("exec", "INSERT INTO t(a, b, e) VALUES (?, ?, ?)", int32(2), "s", float32(2.5)),
			Seq("exec", "INSERT INTO t(a, b) VALUES (?, ?)", uint64(3), []int{1}),
			Seq("exec", "INSERT INTO t(a) VALUES (?)", uint64(1<<63)),
			Seq("exec", "INSERT INTO t(a) VALUES (?)", struct{}{}),
			Seq("query", "SELECT * FROM t ORDER BY a"),
		},
		"several statements": {
			Seq("exec", "INSERT INTO t(a) VALUES (1); INSERT INTO t(a) VALUES (2)"),
			Seq("exec", "INSERT INTO t(a) VALUES (?); INSERT INTO t(a) VALUES (?)", 3, 4),
			Seq("exec", "INSERT INTO t(a) VALUES (?); INSERT INTO t(a) VALUES (?)", 5),
			Seq("exec", "CREATE TABLE v(x); INSERT INTO v VALUES (1)"),
			Seq("exec", "INSERT INTO t(a) VALUES (9); INSERT INTO t(a) VALUES (9)"),
			Seq("exec", "INSERT INTO t(a) VALUES (10); SELEC 1"),
			Seq("query", "SELECT 1; SELECT 2"),
			Seq("query", "INSERT INTO t(a) VALUES (11); SELECT count(*) FROM t"),
			Seq("query", "SELECT count(*) FROM t; -- note"),
			Seq("exec", "SELECT 1; -- note"),
			Seq("query", "INSERT INTO t(a) VALUES (12) RETURNING a; -- note"),
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (13); INSERT INTO t(a) VALUES (14)"),
		},
		"bad SQL and constraint errors": {
			Seq("exec", "SELEC 1"), Seq("query", "SELECT * FROM missing"), Seq("exec", "INSERT INTO t VALUES ("),
			Seq("exec", "INSERT INTO t(a) VALUES (1)"), Seq("exec", "INSERT INTO t(a) VALUES (1)"),
			Seq("query", "INSERT INTO t(a) VALUES (1) RETURNING a"),
			Seq("exec", "INSERT INTO ch(pid) VALUES (42)"),
			Seq("exec", "INSERT INTO p(id) VALUES (1)"),
			Seq("prepare-exec", "INSERT INTO nope VALUES (1)"),
			Seq("queryrow", "SELECT a FROM t WHERE a = 99"),
		},
		"the lease tables dropped in a transaction (if there are any), then more writes": {
			Seq("begin", ""), Seq("exec", "INSERT INTO t(a) VALUES (1)"),
			Seq("exec", "DROP TABLE IF EXISTS _writer_leases"), Seq("exec", "DROP TABLE IF EXISTS _writer_queue"),
			Seq("commit", ""), Seq("exec", "INSERT INTO t(a) VALUES (2)"),
			Seq("begin", ""), Seq("exec", "DELETE FROM t"), Seq("exec", "DELETE FROM p"), Seq("commit", ""),
			Seq("exec", "INSERT INTO t(a) VALUES (3)"), Seq("query", "SELECT a FROM t ORDER BY a"),
			Seq("exec", "DROP TABLE IF EXISTS _writer_leases"), Seq("exec", "INSERT INTO t(a) VALUES (4)"),
		},
		"writes through Query": {
			Seq("query", "INSERT INTO t(a) VALUES (1)"),
			Seq("query", "INSERT INTO t(a, b) VALUES (2, 'x') RETURNING a, b, rowid"),
			Seq("queryrow", "INSERT INTO t(a) VALUES (3) RETURNING a, rowid"),
			Seq("query", "UPDATE t SET b = 'u' RETURNING a, b"),
			Seq("query", "DELETE FROM t WHERE a = 1 RETURNING *"),
			Seq("query", "VACUUM"),
			Seq("prepare-query", "INSERT INTO t(a) VALUES (?) RETURNING a", 4),
			Seq("prepare-query", "INSERT INTO t(a) VALUES (?) RETURNING a", 4),
		},
		"prepared statements": {
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (?)", 1),
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (?)"),
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (?)", 2, 3),
			Seq("prepare-query", "SELECT a FROM t WHERE a > ?", 0),
			Seq("prepare-exec", "SELEC 1"),
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (:a)", sql.Named("a", 4)),
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (?) RETURNING a, rowid", 5),
			Seq("prepare-exec", "UPDATE t SET b = 'r' WHERE a > ? RETURNING a", 0),
			Seq("prepare-exec", "INSERT INTO t(a) VALUES (?) RETURNING a", 5),
			Seq("query", "SELECT a, b FROM t ORDER BY a"),
		},
		"transactions": {
			Seq("begin", ""), Seq("exec", "INSERT INTO t(a) VALUES (1)"), Seq("query", "SELECT count(*) FROM t"),
			Seq("exec", ""), Seq("exec", "INSERT INTO t(a) VALUES (?)"), Seq("query", "INSERT INTO t(a) VALUES (2) RETURNING a"),
			Seq("commit", ""),
			Seq("begin", ""), Seq("exec", "INSERT INTO t(a) VALUES (3)"), Seq("rollback", ""),
			Seq("begin", ""), Seq("exec", "INSERT INTO t(a) VALUES (1)"), Seq("commit", ""),
			Seq("query", "SELECT a FROM t ORDER BY a"),
		},
		"connections": {
			Seq("conn", ""), Seq("exec", "INSERT INTO t(a) VALUES (1)"), Seq("query", "-- c"),
			Seq("exec", "INSERT INTO t(a) VALUES (?)"), Seq("queryrow", "INSERT INTO t(a) VALUES (2) RETURNING a"),
			Seq("prepare-query", "SELECT a FROM t"), Seq("close", ""),
			Seq("query", "SELECT a FROM t ORDER BY a"),
		},
		"cancelled context on a Conn, arguments missing": {
			Seq("conn", ""), Seq("cancelled-query", "DELETE FROM t WHERE a = ?"), Seq("cancelled-exec", "INSERT INTO t(a) VALUES (?)"),
			Seq("close", ""),
		},
		"cancelled contexts": {
			Seq("cancelled-exec", "INSERT INTO t(a) VALUES (1)"), Seq("cancelled-query", "SELECT 1"),
			Seq("cancelled-begin", ""), Seq("cancelled-exec", "SELECT 1"),
			Seq("begin", ""), Seq("cancelled-exec", "INSERT INTO t(a) VALUES (2)"), Seq("commit", ""),
			Seq("query", "SELECT count(*) FROM t"),
			// go-sqlite3's TestExecCancel / TestQueryRowContextCancel: a
			// statement interrupted by its context returns the context's
			// error and, for a write, changes nothing.
			Seq("deadline-exec", "INSERT INTO t(b) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 1000000000"),
			Seq("deadline-query", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c LIMIT 1000000000"),
			Seq("deadline-query", "INSERT INTO t(b) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 1000000000 RETURNING b"),
			Seq("query", "SELECT count(*) FROM t"),
		},
		"RETURNING through Exec reports the previous statement's changes (go-sqlite3 steps it once)": {
			Seq("exec", "INSERT INTO t(a) VALUES (1), (2)"), Seq("exec", "UPDATE t SET a = a + 10 RETURNING a"),
			Seq("exec", "DELETE FROM t WHERE a = 99"), Seq("exec", "UPDATE t SET a = a + 10 RETURNING a"),
			Seq("prepare-exec", "UPDATE t SET a = a + ? RETURNING a", 1), Seq("query", "SELECT changes(), total_changes()"),
		},
		"TEMP and attached databases": {
			Seq("exec", "CREATE TEMP TABLE tt(x)"), Seq("exec", "INSERT INTO tt VALUES (1)"),
			Seq("prepare-exec", "INSERT INTO tt VALUES (?)", 2), Seq("query", "INSERT INTO tt VALUES (3) RETURNING x"),
			Seq("exec", "ATTACH ':memory:' AS m"), Seq("exec", "CREATE TABLE m.mm(x)"), Seq("exec", "INSERT INTO m.mm VALUES (1)"),
			Seq("exec", "INSERT INTO t(a) SELECT x FROM tt"), Seq("query", "SELECT x FROM tt ORDER BY x"),
			Seq("query", "SELECT changes(), total_changes()"),
		},
		"pragmas": {
			Seq("query", "PRAGMA user_version"), Seq("exec", "PRAGMA user_version = 7"),
			Seq("queryrow", "PRAGMA user_version"), Seq("query", "PRAGMA foreign_keys"),
			Seq("query", "PRAGMA table_info(t)"), Seq("exec", "PRAGMA nope"),
			Seq("query", "PRAGMA journal_mode"), Seq("exec", "PRAGMA user_version = ?", 3),
		},
	}
	ts1 := time.Date(2012, time.April, 6, 22, 50, 0, 0, time.UTC)
	ts2 := time.Date(2006, time.January, 2, 15, 4, 5, 123456789, time.UTC)
	tz := time.FixedZone("TEST", -9*3600-13*60)
	stamps := []Op{Seq("exec", "CREATE TABLE foo(id INTEGER, ts timeSTAMP, dt DATETIME)")}
	for i, v := range []any{
		"nonsense", "0000-00-00 00:00:00", time.Time{}.Unix(), ts1, ts2.Unix(), ts2.UnixNano() / int64(time.Millisecond),
		ts1.In(tz), ts1.Format("2006-01-02 15:04:05.000"), ts1.Format("2006-01-02T15:04:05"), ts2,
		"2006-01-02T05:51:05.123456789-09:13", "2012-11-04", "2012-11-04 00:00", "2012-11-04T00:00:00.000Z", "2012-11-04Z",
	} {
		stamps = append(stamps, Seq("exec", "INSERT INTO foo(id, ts, dt) VALUES (?, ?, ?)", i, v, v))
	}
	stamps = append(stamps, Seq("query", "SELECT id, ts, dt FROM foo ORDER BY id"), Seq("query", "SELECT id, ts FROM foo WHERE ts = ?", ts1))
	// Ported from go-sqlite3 v1.14.53's sqlite3_test.go (the tests that use
	// only database/sql).
	cases["go-sqlite3 TestTimestamp"] = stamps
	cases["go-sqlite3 TestExecer, TestQueryer"] = []Op{
		Seq("exec", "create table foo (id integer); -- one comment\n insert into foo(id) values(?);\n insert into foo(id) values(?);\n insert into foo(id) values(?); -- another comment\n", 1, 2, 3),
		Seq("exec", "insert into foo(id) values(?);\ninsert into foo(id) values(?);", 5, 4),
		Seq("query", "\n\t\tselect id from foo order by id;\n\t"),
	}
	cases["go-sqlite3 TestExecWithoutArgsStopsAtMissingArgs"] = []Op{
		Seq("exec", "CREATE TABLE x1 (x INTEGER)"),
		Seq("exec", "INSERT INTO x1 VALUES (7); INSERT INTO x1 VALUES (?); INSERT INTO x1 VALUES (9)"),
		Seq("queryrow", "SELECT group_concat(coalesce(x, 'NULL')) FROM x1"),
	}
	cases["go-sqlite3 TestQueryCommentOnly, TestNonColumnString"] = []Op{
		Seq("queryrow", ""), Seq("queryrow", "   "), Seq("queryrow", "-- comment"), Seq("query", "---- comment\n"),
		Seq("exec", "/* block */"), Seq("queryrow", "SELECT 'hello'"),
	}
	cases["go-sqlite3 TestNamedParamClearBindings, TestStringContainingZero, TestBooleanRoundtrip, TestFloat32, TestNull"] = []Op{
		Seq("exec", "insert into t(a, b, e) values($x, $y, $z)", sql.Named("x", 1), sql.Named("y", "two"), sql.Named("z", 3.0)),
		Seq("exec", "insert into t(a, b, e) values($x, $y, $z)", sql.Named("x", 10), sql.Named("y", nil), sql.Named("z", nil)),
		Seq("exec", "insert into t(a, b) values(?, ?)", 11, "a\x00b"),
		Seq("exec", "insert into t(a, b) values(?, ?)", 12, true),
		Seq("exec", "insert into t(a, e) values(?, ?)", 13, float32(1.25)),
		Seq("exec", "insert into t(a, c) values(?, ?)", 14, []byte(nil)),
		Seq("query", "select a, b, c, e, typeof(b), typeof(c) from t order by a"),
		Seq("queryrow", "select NULL"),
	}
	cases["arguments database/sql converts, prepared and not, in and out of a transaction"] = convertedArgsOps()
	return cases
}

// The grammar of FuzzDifferential: statements (reads, writes, PRAGMAs,
// comments, several statements, bad SQL) and argument values.
var fuzzStatements = []string{
	"SELECT 1", "SELECT * FROM t ORDER BY a", "SELECT a, b FROM t WHERE a > ?", "SELECT ?", "SELECT :x",
	"SELECT count(*) FROM t", "SELECT 1; -- note", "/* c */ SELECT 2", "SELECT a FROM t WHERE a = ?; SELECT 3",
	"INSERT INTO t(a, b) VALUES (?, ?)", "INSERT INTO t(a) VALUES (?) RETURNING a, rowid", "UPDATE t SET b = ? WHERE a = ?",
	"DELETE FROM t WHERE a = ?", "INSERT INTO t(a, c) VALUES (?+0, ?)", "INSERT INTO t(a, b) VALUES (:a, @b)",
	"INSERT OR REPLACE INTO t(a, b) VALUES (?, 'r')", "INSERT INTO t(a) VALUES (?) ON CONFLICT(a) DO UPDATE SET b = 'c'",
	"UPDATE t SET e = e + 1 RETURNING a, e", "INSERT INTO p(name) VALUES (?)", "INSERT INTO ch(pid, note) VALUES (?, ?)",
	"DELETE FROM p WHERE id = ?", "CREATE TABLE IF NOT EXISTS u(x)", "INSERT INTO u VALUES (?)", "DROP TABLE IF EXISTS u",
	"INSERT INTO t(d) VALUES (?)", "SELECT d FROM t WHERE d IS NOT NULL",
	"PRAGMA user_version", "PRAGMA user_version = 5", "PRAGMA foreign_keys", "PRAGMA table_info(t)",
	"", " ", "-- c", "/* x */", ";",
	"INSERT INTO t(a) VALUES (100); INSERT INTO t(a) VALUES (101)", "SELECT 1; SELECT 2",
	"CREATE TABLE IF NOT EXISTS w(x); INSERT INTO w VALUES (1)", "INSERT INTO t(a) VALUES (?); SELECT ?",
	"SELEC 1", "INSERT INTO t VALUES (", "SELECT * FROM missing", "INSERT INTO missing VALUES (1)",
	"INSERT INTO p(id, name) VALUES (1, NULL)", "VACUUM",
	"INSERT OR FAIL INTO t(a) VALUES (?), (?), (?)", "INSERT INTO t(a) VALUES (?); PRAGMA foreign_keys = OFF",
	"CREATE TEMP TABLE IF NOT EXISTS tt(x)", "INSERT INTO tt VALUES (?)", "SELECT 'a; PRAGMA locking_mode=EXCLUSIVE'",
	"UPDATE t SET a = a + 1 RETURNING a", "SAVEPOINT s1", "RELEASE s1", "ROLLBACK TO s1",
}

var fuzzValues = []any{
	nil, int64(0), int64(1), int64(-7), 2.5, "s", "", []byte{}, []byte("b\x00"), []byte(nil), true, false,
	Time, sql.Named("a", 1), sql.Named("b", "n"), sql.Named("x", nil), sql.Named("zz", 3), int64(100),
}

var fuzzVias = []string{
	"exec", "exec", "query", "query", "queryrow", "prepare-exec", "prepare-query",
	"begin", "commit", "rollback", "conn", "close", "cancelled-exec", "cancelled-query",
}

// DecodeOps turns fuzz bytes into a call sequence: at most 16 calls, each
// reading a via, a statement, an arity and that many values. A prepared
// statement of empty text is left out (go-sqlite3 crashes on it; the
// difference is listed and tested separately), so is a cancelled context
// on a *sql.Conn (go-sqlite3's outcome is a race) and a savepoint outside
// a transaction (a hand-written transaction, listed), and no call is made on
// the *sql.DB while a transaction or *sql.Conn holds the pool's connection.
func DecodeOps(data []byte) []Op {
	var ops []Op
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	inTx, inConn, temp := false, false, false
	for len(data) > 0 && len(ops) < 16 {
		via := fuzzVias[next()%len(fuzzVias)]
		query := fuzzStatements[next()%len(fuzzStatements)]
		args := make([]any, next()%4)
		for i := range args {
			args[i] = fuzzValues[next()%len(fuzzValues)]
		}
		skip := false
		switch via {
		case "begin", "conn":
			skip = inTx || inConn
		case "commit", "rollback":
			skip = !inTx
		case "close":
			skip = !inConn
		case "prepare-exec", "prepare-query":
			skip = EmptySQL(query)
		case "cancelled-exec", "cancelled-query":
			// database/sql hands a *sql.Conn's call a cancelled context
			// unchecked, and go-sqlite3 then races the statement against
			// sqlite3_interrupt: it may run or not. (The same on *sql.DB
			// and *sql.Tx is refused by database/sql.)
			skip = inConn
		}
		if savepoint(query) && !inTx {
			// Outside the driver's transaction a savepoint is a
			// hand-written transaction (a listed difference).
			skip = true
		}
		if temp && strings.Contains(query, "RETURNING") && (via == "exec" || via == "prepare-exec") {
			// On a connection with TEMP objects the first run of a write
			// is preceded by an EXPLAIN, which zeroes changes(); Exec of a
			// RETURNING statement reports changes() before the statement
			// completes (a listed difference).
			skip = true
		}
		if skip {
			continue
		}
		if strings.Contains(query, "TEMP") {
			temp = true
		}
		switch via {
		case "begin":
			inTx = true
		case "commit", "rollback":
			inTx = false
		case "conn":
			inConn = true
		case "close":
			inConn = false
		}
		ops = append(ops, Op{Via: via, SQL: query, Args: args})
	}
	return ops
}

// savepoint reports the grammar's savepoint statements.
func savepoint(q string) bool {
	return strings.HasPrefix(q, "SAVEPOINT") || strings.HasPrefix(q, "RELEASE") || strings.HasPrefix(q, "ROLLBACK")
}

// EmptySQL reports text with no statement in it (of the grammar's texts).
func EmptySQL(q string) bool {
	q = strings.TrimSpace(q)
	return q == "" || q == ";" || strings.HasPrefix(q, "--") || (strings.HasPrefix(q, "/*") && strings.HasSuffix(q, "*/"))
}

// PrivateCases are the sequences every base runs on private databases (in
// memory and not shared, or the temporary on-disk database), where
// cleolease opens exactly what its base opens, with no lease: Cases, and
// the calls whose behaviour the lease changes on a file (a connection left
// inside a hand-written transaction is handed out again, a ReadOnly or
// ReadCommitted transaction is what the base makes of it, exclusive
// locking).
func PrivateCases() map[string][]Op {
	cases := Cases()
	cases["a connection left inside a hand-written transaction"] = []Op{
		Seq("conn", ""), Seq("exec", "BEGIN"), Seq("exec", "INSERT INTO t(a) VALUES (1)"), Seq("close", ""),
		Seq("query", "SELECT a FROM t"), Seq("exec", "INSERT INTO t(a) VALUES (2)"), Seq("exec", "COMMIT"),
		Seq("query", "SELECT a FROM t ORDER BY a"),
	}
	cases["ReadOnly and ReadCommitted transactions"] = []Op{
		Seq("begin-ro", ""), Seq("exec", "INSERT INTO t(a) VALUES (1)"), Seq("commit", ""),
		Seq("begin-rc", ""), Seq("exec", "INSERT INTO t(a) VALUES (2)"), Seq("commit", ""),
		Seq("query", "SELECT a FROM t ORDER BY a"),
	}
	cases["exclusive locking, journal mode"] = []Op{
		Seq("exec", "PRAGMA locking_mode=EXCLUSIVE"), Seq("exec", "INSERT INTO t(a) VALUES (1)"),
		Seq("prepare-query", "PRAGMA locking_mode=EXCLUSIVE"), Seq("query", "PRAGMA journal_mode=DELETE"),
		Seq("begin", ""), Seq("exec", "INSERT INTO t(a) VALUES (2)"), Seq("commit", ""),
		Seq("query", "SELECT a FROM t ORDER BY a"),
	}
	return cases
}

// FuzzSeeds are the seeds of every base's FuzzDifferential (DecodeOps
// reads them).
func FuzzSeeds() [][]byte {
	return [][]byte{
		{0, 31, 0},                 // exec of an empty string
		{0, 9, 1, 2, 0, 9, 0},      // INSERT with too few arguments, twice
		{0, 13, 2, 1, 2, 0, 13, 0}, // INSERT (?+0) with one argument too many
		{2, 10, 1, 2, 4, 10, 1, 16},
		{7, 0, 0, 0, 9, 2, 17, 4, 8, 0, 0},
		{10, 0, 0, 3, 14, 0, 4, 33, 0, 11, 0, 0},
		{12, 9, 2, 1, 2, 13, 0, 0, 0, 35, 0, 2, 36, 0},
	}
}
