package cleolease_test

import (
	"strings"
	"testing"
)

// Calls an adversarial review found to differ between go-sqlite3 (opened
// with cleolease's effective DSN) and cleolease, outside the README's closed
// list of "Differences from go-sqlite3", and which now behave alike. Each
// runs the same calls through both drivers (runDifferential).

// An autocommit write whose statement fails under the FAIL conflict
// resolution (INSERT OR FAIL, a column's ON CONFLICT FAIL, RAISE(FAIL) in a
// trigger) keeps the rows the statement changed before the failure: SQLite
// does not back out a FAIL statement, and in autocommit mode those changes
// are committed. cleolease runs the statement inside its own BEGIN
// IMMEDIATE and, as autocommit would, commits what a failed statement left
// (leasedWrite.finish): the same error, rows 1 and 2 present.
func TestReviewInsertOrFailKeepsEarlierRows(t *testing.T) {
	runDifferential(t, []dop{
		seq("exec", "INSERT OR FAIL INTO t(a) VALUES (1),(2),(1),(3)"),
		seq("query", "SELECT a FROM t ORDER BY a"),
	})
}

func TestReviewRaiseFailKeepsEarlierRows(t *testing.T) {
	runDifferential(t, []dop{
		seq("exec", "CREATE TABLE rf(x)"),
		seq("exec", "CREATE TRIGGER rft BEFORE INSERT ON rf WHEN NEW.x = 3 BEGIN SELECT RAISE(FAIL, 'no three'); END"),
		seq("exec", "INSERT INTO rf(x) VALUES (1),(2),(3),(4)"),
		seq("query", "SELECT x FROM rf ORDER BY x"),
	})
}

// The same through a prepared statement and through Query (both fenced).
func TestReviewOnConflictFailPreparedAndQuery(t *testing.T) {
	runDifferential(t, []dop{
		seq("exec", "CREATE TABLE cf(x UNIQUE ON CONFLICT FAIL)"),
		seq("prepare-exec", "INSERT INTO cf(x) VALUES (?),(?),(?)", 1, 2, 1),
		seq("query", "INSERT INTO cf(x) VALUES (5),(6),(5) RETURNING x"),
		seq("query", "SELECT x FROM cf ORDER BY x"),
	})
}

// A deferred foreign-key violation by a write issued through Query: in
// autocommit mode SQLite checks it when the statement ends, so go-sqlite3
// returns the RETURNING row and then the error from rows.Err(). In
// cleolease the violation surfaces at its own COMMIT; the buffered rows
// carry it to the same place.
func TestReviewDeferredForeignKeyThroughQuery(t *testing.T) {
	runDifferential(t, []dop{
		seq("exec", "CREATE TABLE df(pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)"),
		seq("query", "INSERT INTO df VALUES (43) RETURNING pid"),
	})
}

// Text that merely mentions PRAGMA locking_mode=EXCLUSIVE inside a string
// literal or a comment runs as with go-sqlite3: refusesLocking splits
// statements outside quotes and comments.
func TestReviewLockingModeInLiteralOrComment(t *testing.T) {
	t.Run("select literal", func(t *testing.T) {
		runDifferential(t, []dop{seq("query", "SELECT 'a; PRAGMA locking_mode=EXCLUSIVE'")})
	})
	t.Run("insert literal", func(t *testing.T) {
		runDifferential(t, []dop{seq("exec", "INSERT INTO t(b) VALUES ('x;pragma locking_mode = exclusive')")})
	})
	t.Run("comment", func(t *testing.T) {
		runDifferential(t, []dop{seq("query", "SELECT 1 -- ; PRAGMA locking_mode = EXCLUSIVE")})
	})
	t.Run("prepare literal", func(t *testing.T) {
		runDifferential(t, []dop{seq("prepare-query", "SELECT '; PRAGMA locking_mode=EXCLUSIVE'")})
	})
}

// Tx.Rollback after the transaction was ended by hand inside it (Exec of
// ROLLBACK, COMMIT or END): go-sqlite3's Rollback runs ROLLBACK and returns
// SQLite's "cannot rollback - no transaction is active"; so does
// cleolease's.
func TestReviewRollbackAfterManualEnd(t *testing.T) {
	for _, end := range []string{"ROLLBACK", "COMMIT", "END"} {
		t.Run(end, func(t *testing.T) {
			runDifferential(t, []dop{
				seq("begin", ""), seq("exec", "INSERT INTO t(a) VALUES (1)"), seq("exec", end), seq("rollback", ""),
			})
		})
	}
}

// SQLite applies many PRAGMA settings while preparing them (foreign_keys,
// query_only, busy_timeout, …). When go-sqlite3 stops before a later PRAGMA
// of a string (an earlier statement fails, or arguments are missing), it
// never prepares it; classify does not prepare it either.
func TestReviewClassifyAppliesLaterPragmas(t *testing.T) {
	t.Run("after a failing statement", func(t *testing.T) {
		runDifferential(t, []dop{
			seq("exec", "INSERT INTO t(a) VALUES (1); INSERT INTO t(a) VALUES (1); PRAGMA foreign_keys = OFF"),
			seq("exec", "INSERT INTO ch(pid) VALUES (42)"),
			seq("query", "PRAGMA foreign_keys"),
		})
	})
	t.Run("after missing arguments", func(t *testing.T) {
		runDifferential(t, []dop{
			seq("exec", "INSERT INTO t(a) VALUES (?); PRAGMA foreign_keys = OFF"),
			seq("query", "PRAGMA foreign_keys"),
		})
	})
	t.Run("busy_timeout", func(t *testing.T) {
		runDifferential(t, []dop{
			seq("exec", "INSERT INTO t(a) VALUES (?); PRAGMA busy_timeout = 7"),
			seq("query", "PRAGMA busy_timeout"),
		})
	})
}

// runDifferentialDSN is runDifferential on twins opened with the DSN query
// q (cleolease parameters allowed; go-sqlite3 gets the effective DSN).
func runDifferentialDSN(t *testing.T, q string, ops []dop) {
	t.Helper()
	raw, cl := openTwins(t, q)
	sr, sc := &session{db: raw}, &session{db: cl}
	for _, s := range []*session{sr, sc} {
		if got := s.runOp(seq("exec", diffSchema)); !strings.HasPrefix(got, "exec: id=") {
			t.Fatalf("schema: %s", got)
		}
	}
	for i, o := range ops {
		want, got := sr.runOp(o), sc.runOp(o)
		if want != got {
			sr.end()
			sc.end()
			t.Fatalf("call %d differs: %v\n go-sqlite3: %s\n cleolease:  %s", i, o, want, got)
		}
	}
	sr.end()
	sc.end()
	if want, got := dumpTables(t, raw), dumpTables(t, cl); want != got {
		t.Fatalf("data differs after the sequence\n go-sqlite3:\n%s\n cleolease:\n%s", want, got)
	}
}
