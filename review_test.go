package cleolease_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"
)

// Review 13: calls whose outcome differs between go-sqlite3 (opened with
// cleolease's effective DSN) and cleolease, outside the README's closed list
// of "Differences from go-sqlite3". Each test runs the same calls through
// both drivers with the differential harness (runDifferential) and fails
// while the difference remains.

// An autocommit write whose statement fails under the FAIL conflict
// resolution (INSERT OR FAIL, a column's ON CONFLICT FAIL, RAISE(FAIL) in a
// trigger) keeps the rows the statement changed before the failure: SQLite
// does not back out a FAIL statement, and in autocommit mode those changes
// are committed. cleolease runs the statement inside its own BEGIN
// IMMEDIATE and rolls the whole transaction back on any error, so the
// earlier rows are lost. go-sqlite3: error, rows 1 and 2 present;
// cleolease: same error, no rows.
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
// returns the RETURNING row and then the error from rows.Err(). cleolease
// runs the statement in its own transaction, the violation surfaces at its
// COMMIT, and Query itself fails: no row, error from Query.
func TestReviewDeferredForeignKeyThroughQuery(t *testing.T) {
	runDifferential(t, []dop{
		seq("exec", "CREATE TABLE df(pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)"),
		seq("query", "INSERT INTO df VALUES (43) RETURNING pid"),
	})
}

// refusesLocking splits the text at every ';' with quotes and comments
// ignored, so text that merely mentions the pragma inside a string literal
// or a comment is refused with ErrExclusiveLocking, where go-sqlite3 runs
// it. The README's difference covers "PRAGMA locking_mode=EXCLUSIVE through
// any call", not a SELECT or INSERT of a literal.
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

// The lease tables live in the user's database file: the schema, the
// sqlite_sequence table (the lease tables use AUTOINCREMENT), the page count
// and the WAL's frame count all differ from go-sqlite3's. The README
// mentions the tables under "How the lease works" but not in the closed
// list of differences.
func TestReviewLeaseTablesVisible(t *testing.T) {
	t.Run("sqlite_master", func(t *testing.T) {
		runDifferential(t, []dop{seq("query", "SELECT type, name FROM sqlite_master ORDER BY name")})
	})
	t.Run("sqlite_sequence", func(t *testing.T) {
		runDifferential(t, []dop{seq("query", "SELECT name, seq FROM sqlite_sequence")})
	})
	t.Run("page_count", func(t *testing.T) {
		runDifferential(t, []dop{seq("query", "PRAGMA page_count")})
	})
	t.Run("wal_checkpoint", func(t *testing.T) {
		runDifferential(t, []dop{seq("exec", "INSERT INTO t(a) VALUES (1)"), seq("query", "PRAGMA wal_checkpoint")})
	})
}

// Tx.Rollback after the transaction was ended by hand inside it (Exec of
// ROLLBACK, COMMIT or END): go-sqlite3's Rollback runs ROLLBACK and returns
// SQLite's "cannot rollback - no transaction is active"; cleolease's
// leasedWrite.abort sees autocommit and returns nil.
func TestReviewRollbackAfterManualEnd(t *testing.T) {
	for _, end := range []string{"ROLLBACK", "COMMIT", "END"} {
		t.Run(end, func(t *testing.T) {
			runDifferential(t, []dop{
				seq("begin", ""), seq("exec", "INSERT INTO t(a) VALUES (1)"), seq("exec", end), seq("rollback", ""),
			})
		})
	}
}

// Leaving WAL mode (PRAGMA journal_mode=DELETE/TRUNCATE/…) needs an
// exclusive lock; the lease engine's private connection keeps the file open
// in WAL mode, so the pragma fails at once with SQLITE_BUSY ("database is
// locked") where go-sqlite3 (one pooled connection) switches.
func TestReviewLeaveWALMode(t *testing.T) {
	t.Run("exec", func(t *testing.T) {
		runDifferential(t, []dop{seq("exec", "PRAGMA journal_mode = DELETE"), seq("query", "PRAGMA journal_mode")})
	})
	t.Run("query", func(t *testing.T) {
		runDifferential(t, []dop{seq("query", "PRAGMA journal_mode = TRUNCATE")})
	})
}

// classify prepares every statement of a string before go-sqlite3 runs any,
// and SQLite applies many PRAGMA settings while preparing them (the flag
// pragmas such as foreign_keys, query_only, recursive_triggers; busy_timeout,
// cache_size, synchronous, …). When go-sqlite3 stops before a later PRAGMA
// (an earlier statement fails, or arguments are missing), go-sqlite3 never
// prepares it, so the setting is unchanged; through cleolease it has already
// taken effect. Here foreign keys end up OFF on the connection, and a later
// insert that violates a foreign key succeeds through cleolease while
// go-sqlite3 refuses it.
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
		if got := s.runOp(dop{via: "exec", sql: diffSchema}); !strings.HasPrefix(got, "exec: id=") {
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

// With _lease_steal_after_ttl=true the fencing check is an UPDATE of the
// lease row (fenceRefreshSQL) run on the caller's connection inside its
// transaction, so after every fenced write SQL's changes() reports the lease
// row (1) instead of the caller's statement, and total_changes() counts one
// more per commit. (The same UPDATE also reaches update hooks and
// authorizers registered on the connection.)
func TestReviewStealAfterTTLChangesCounters(t *testing.T) {
	runDifferentialDSN(t, "?_lease_steal_after_ttl=true", []dop{
		seq("exec", "INSERT INTO t(a) VALUES (1),(2),(3)"),
		seq("query", "SELECT changes(), total_changes(), last_insert_rowid()"),
	})
}

// PRAGMA data_version changes only when another connection commits; apps
// poll it to learn of outside changes (cache invalidation). A connection's
// own commits leave it unchanged with go-sqlite3; through cleolease the lease
// engine's private connection commits the claim/release of the lane around
// (and after the linger, 100 ms by default) the caller's own write, so the
// caller's data_version moves although nobody else wrote.
func TestReviewDataVersionMovesOnOwnWrite(t *testing.T) {
	raw, cl := openTwins(t, "")
	outcome := func(db *sql.DB) string {
		s := &session{db: db}
		defer s.end()
		var b strings.Builder
		for _, o := range []dop{seq("exec", diffSchema), seq("query", "PRAGMA data_version"), seq("exec", "INSERT INTO t(a) VALUES (1)")} {
			b.WriteString(s.runOp(o) + "\n")
		}
		time.Sleep(500 * time.Millisecond) // past the default _lease_linger
		b.WriteString(s.runOp(seq("query", "PRAGMA data_version")))
		return b.String()
	}
	if want, got := outcome(raw), outcome(cl); want != got {
		t.Fatalf("PRAGMA data_version differs\n go-sqlite3:\n%s\n cleolease:\n%s", want, got)
	}
}
