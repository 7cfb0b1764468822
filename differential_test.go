package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/difftest"
)

// The differential suite runs the same calls through raw go-sqlite3 (opened
// with cleolease's effective DSN, its default pragmas included) and through
// cleolease, on twin files, and compares every result and every error: the
// rows, the column types, RowsAffected and LastInsertId, SQLite's code,
// extended code, errno and message, other errors' text, whether a context
// error is the context's error itself, and at the end the data of every
// table. The harness and the sequences are internal/difftest's, shared with
// the modernc and ncruces modules, which run them against their own base
// drivers. The calls it generates avoid the README's "Differences from
// go-sqlite3", which have tests of their own; anything else that differs is
// a bug.

// dop is one call of a differential sequence.
type dop = difftest.Op

func seq(via, query string, args ...any) dop { return difftest.Seq(via, query, args...) }

var diffTime = difftest.Time

// diffSchema is the schema every differential sequence starts from.
const diffSchema = difftest.Schema

// The root's names for difftest's renderings (other test files use them).
func fmtValue(v any) string { return difftest.FmtValue(v) }

func fmtErr(ctx context.Context, err error) string { return difftest.FmtErr(ctx, err) }

func fmtResult(ctx context.Context, res sql.Result, err error) string {
	return difftest.FmtResult(ctx, res, err)
}

func fmtRows(ctx context.Context, rows *sql.Rows, err error) string {
	return difftest.FmtRows(ctx, rows, err)
}

func dumpTables(t testing.TB, db *sql.DB) string {
	t.Helper()
	return difftest.DumpTables(t, db)
}

// session is a difftest.Session on db, as the root's tests write it.
type session struct {
	db *sql.DB
	s  *difftest.Session
}

func (s *session) sess() *difftest.Session {
	if s.s == nil {
		s.s = &difftest.Session{DB: s.db}
	}
	return s.s
}

func (s *session) runOp(o dop) string { return s.sess().Run(o) }
func (s *session) end()               { s.sess().End() }

// compareOps runs ops through both sessions, fails t at the first call
// whose outcome differs, ends both sessions and returns the transcript.
func compareOps(t testing.TB, sr, sc *session, ops []dop) []string {
	t.Helper()
	return difftest.CompareOps(t, sr.sess(), sc.sess(), ops)
}

// openTwins opens raw go-sqlite3 and cleolease on two fresh files with the
// same DSN query (cleolease parameters allowed: raw gets the effective DSN).
// Both pools hold one connection, so "the first time on a connection" and
// "every later time" are both exercised by a sequence.
func openTwins(t testing.TB, query string) (raw, cl *sql.DB) {
	t.Helper()
	return openTwinsAt(t, "raw.db", "cl.db", query, nil)
}

// openTwinsAt is openTwins with the twins at rawName and clName (relative
// to a fresh directory; a missing subdirectory stays missing) and setup, if
// not nil, run on each twin's path before anything opens it (to plant a
// file that is not a database, say).
func openTwinsAt(t testing.TB, rawName, clName, query string, setup func(path string)) (raw, cl *sql.DB) {
	t.Helper()
	// Not t.TempDir: a fuzz seed's name holds '#', which ends the path of a
	// "file:" URI.
	dir, err := os.MkdirTemp("", "cleolease-diff-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rawPath, clPath := filepath.Join(dir, rawName), filepath.Join(dir, clName)
	if setup != nil {
		setup(rawPath)
		setup(clPath)
	}
	return openTwinDSNs(t, "file:"+rawPath+query, "file:"+clPath+query)
}

// openTwinDSNs opens raw go-sqlite3 with the effective DSN of the cleolease
// DSN rawDSN, and cleolease with clDSN, both pools holding one connection.
func openTwinDSNs(t testing.TB, rawDSN, clDSN string) (raw, cl *sql.DB) {
	t.Helper()
	eff, err := cleolease.EffectiveSQLiteDSN(rawDSN)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = sql.Open("sqlite3", eff)
	if err != nil {
		t.Fatal(err)
	}
	cl, err = sql.Open("cleolease", clDSN)
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sql.DB{raw, cl} {
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
	}
	return raw, cl
}

// runDifferential runs ops through both drivers and fails t at the first
// call whose outcome differs, and when the data differs at the end.
func runDifferential(t testing.TB, ops []dop) {
	t.Helper()
	raw, cl := openTwins(t, "")
	runDifferentialOn(t, raw, cl, ops)
}

// runDifferentialOn is runDifferential on twins already open.
func runDifferentialOn(t testing.TB, raw, cl *sql.DB, ops []dop) {
	t.Helper()
	difftest.RunOn(t, raw, cl, ops)
}

// TestDifferentialCases are the calls issue 13 found different, their
// neighbours, and the behaviour of go-sqlite3's own tests that use only
// database/sql (difftest.Cases).
func TestDifferentialCases(t *testing.T) {
	for name, ops := range differentialCases() {
		t.Run(name, func(t *testing.T) { runDifferential(t, ops) })
	}
}

// differentialCases are TestDifferentialCases' sequences, by name.
func differentialCases() map[string][]dop { return difftest.Cases() }

// TestDifferentialColumnTypesMatch compares what database/sql reports of
// the columns of reads and of writes through Query, on both drivers.
func TestDifferentialColumnTypesMatch(t *testing.T) {
	runDifferential(t, []dop{
		seq("query", "INSERT INTO t(a, b, c, d, e) VALUES (1, 'x', x'00', ?, 1.5) RETURNING a, b, c, d, e, 1, NULL", diffTime),
		seq("query", "SELECT a, b, c, d, e, 1, NULL FROM t"),
	})
}

// FuzzDifferential generates call sequences and fails on any difference
// between go-sqlite3 and cleolease. Run it with
//
//	go test -run '^$' -fuzz FuzzDifferential -fuzztime 10m .
//
// Its findings are kept in testdata/fuzz/FuzzDifferential.
func FuzzDifferential(f *testing.F) {
	for _, seed := range difftest.FuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := difftest.DecodeOps(data)
		if len(ops) == 0 {
			return
		}
		runDifferential(t, ops)
	})
}

// TestDifferentialHarnessDetects makes sure the comparison can fail: the
// same calls against a cleolease twin whose data was changed behind its back
// must be reported, by the call that reads it and by the final dump, and
// go-sqlite3's errors are read with their codes (difftest.CheckDetects).
func TestDifferentialHarnessDetects(t *testing.T) {
	raw, cl := openTwins(t, "")
	difftest.CheckDetects(t, raw, cl)
	if want := "sqlite3.Error sqlite(1/1/errno 0): no such table: missing"; fmtErr(context.Background(), rawErr(t, raw)) != want {
		t.Fatalf("go-sqlite3's error renders as %s, want %s", fmtErr(context.Background(), rawErr(t, raw)), want)
	}
}

// rawErr is the error of a statement on a missing table.
func rawErr(t *testing.T, db *sql.DB) error {
	t.Helper()
	_, err := db.Exec("INSERT INTO missing VALUES (1)")
	if err == nil {
		t.Fatal("no error")
	}
	return err
}

// TestDifferentialOpenErrors: a file that cannot be opened (missing with
// mode=rw or mode=ro, in a missing directory) or is not a database gives,
// through cleolease, the very error go-sqlite3 gives — the same dynamic
// type (a bare sqlite3.Error, not wrapped) and value (code, extended code,
// system errno, message) — on every path: Ping, Exec, Query, Prepare,
// BeginTx, Conn, and again on a later call (go-sqlite3's TestOpenNoCreate,
// TestError_SystemErrno, TestCorruptDbErrors).
func TestDifferentialOpenErrors(t *testing.T) {
	every := []dop{
		seq("ping", ""), seq("exec", "CREATE TABLE x(a)"), seq("query", "SELECT * FROM sqlite_master"),
		seq("prepare-exec", "DROP TABLE foo"), seq("queryrow", "SELECT count(*) FROM sqlite_master"),
		seq("begin", ""), seq("exec", "INSERT INTO x VALUES (1)"), seq("commit", ""),
		seq("conn", ""), seq("exec", "DROP TABLE foo"), seq("close", ""), seq("ping", ""),
	}
	notADB := strings.Repeat("this is not an SQLite database\n", 200)
	fiveBytes := "\x01\x02\x03\x04\x05" // go-sqlite3's TestCorruptDbErrors
	for _, tc := range []struct {
		name, rel, query string
		junk             string // the file's content; "" for no file
		ops              []dop
	}{
		{"missing file, mode=rw", "x.db", "?mode=rw", "", every},
		{"missing file, mode=ro", "x.db", "?mode=ro", "", every},
		{"missing directory", "nodir/x.db", "", "", every},
		{"missing directory, lease off", "nodir/x.db", "?_lease_mode=off", "", every},
		{"five bytes", "x.db", "", fiveBytes, every},
		{"not a database", "x.db", "", notADB, every},
		{"not a database, lease off", "x.db", "?_lease_mode=off", notADB, every},
		// With a rollback journal go-sqlite3's open reads nothing, and
		// the first statement that reads the file meets the error; in
		// cleolease the lease engine's first use of the file meets it at
		// the connect, as the same sqlite3.Error.
		{"not a database, rollback journal", "x.db", "?_journal_mode=DELETE", notADB, []dop{
			seq("exec", "CREATE TABLE x(a)"), seq("query", "SELECT * FROM sqlite_master"),
			seq("prepare-exec", "DROP TABLE foo"), seq("exec", "DROP TABLE foo"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, cl := openTwinsAt(t, "raw/"+tc.rel, "cl/"+tc.rel, tc.query, func(path string) {
				if dir := filepath.Dir(path); filepath.Base(dir) != "nodir" {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if tc.junk != "" {
					if err := os.WriteFile(path, []byte(tc.junk), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			})
			t.Log(strings.Join(compareOps(t, &session{db: raw}, &session{db: cl}, tc.ops), "\n"))
		})
	}
}

// privateDSNs are DSNs of private databases: in memory and not shared, or
// the temporary on-disk database an empty file name opens.
var privateDSNs = []string{
	":memory:", "file::memory:", "file:pm?mode=memory", "file:pm?cache=private&mode=memory",
	":memory:?cache=shared", // a plain path: go-sqlite3 drops the query
	"file:pm?vfs=memdb", "", "file:",
}

// TestDifferentialPrivateDatabases: a private database opens exactly as
// with go-sqlite3 — no lease, nothing else different — whether the pool
// holds one connection (as pocket-id's tests set it) or any number: every
// sequence of TestDifferentialCases, and the calls whose behaviour the
// lease changes on a file (a connection left inside a hand-written
// transaction is handed out again, a ReadOnly or ReadCommitted
// transaction is what go-sqlite3 makes of it, exclusive locking).
func TestDifferentialPrivateDatabases(t *testing.T) {
	cases := difftest.PrivateCases()
	for _, dsn := range privateDSNs {
		for _, maxOpen := range []int{1, 0} {
			t.Run(fmt.Sprintf("%q/max open %d", dsn, maxOpen), func(t *testing.T) {
				for name, ops := range cases {
					t.Run(name, func(t *testing.T) {
						raw, cl := openTwinDSNs(t, dsn, dsn)
						raw.SetMaxOpenConns(maxOpen)
						cl.SetMaxOpenConns(maxOpen)
						runDifferentialOn(t, raw, cl, ops)
					})
				}
			})
		}
	}
}
