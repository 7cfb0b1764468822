package ncruces_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3", the raw twin's driver

	"github.com/cleocode/cleolease/internal/difftest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

// The differential suite over modernc (issue 30: cleolease over modernc
// behaves as modernc): internal/difftest's sequences run through modernc's
// own driver "sqlite", opened with the DSN cleolease uses (its default
// pragmas included), and through cleolease-modernc, on twin files; every
// result, every error and the final data must be the same.

// diffSkips are the sequences of difftest.Cases left out over ncruces, each
// for a row of the README's "What differs from ncruces alone".
var diffSkips = map[string]string{}

// emptyQuery reports a call left out of every sequence over ncruces: one
// that prepares text with no statement in it (empty, white space,
// comments). ncruces's driver has no QueryContext on its connection, so
// database/sql prepares the text of Query and QueryRow, and the statement
// ncruces returns for such text dereferences a nil *sqlite3.Stmt in
// NumInput: the call panics in ncruces alone. cleolease answers it with no
// rows, as the README's "Differences from go-sqlite3" row "`Prepare` of
// empty or comment-only text" says of go-sqlite3's crash ("never a
// crash"). Exec of such text prepares only when it has arguments (ncruces's
// ExecContext hands those to database/sql's prepared path); without, it
// stays.
func emptyQuery(o difftest.Op) bool {
	if !strings.Contains(o.Via, "exec") && !strings.Contains(o.Via, "query") {
		return false // begin, commit, conn, ...: no text
	}
	exec := o.Via == "exec" || o.Via == "cancelled-exec"
	return difftest.EmptySQL(o.SQL) && (!exec || len(o.Args) > 0)
}

// withoutEmptyQueries returns ops less the calls emptyQuery reports,
// logging them.
func withoutEmptyQueries(t testing.TB, ops []difftest.Op) []difftest.Op {
	return slices.DeleteFunc(slices.Clone(ops), func(o difftest.Op) bool {
		if emptyQuery(o) {
			t.Logf("left out: %v (panics in ncruces alone)", o)
			return true
		}
		return false
	})
}

// rawDriver is the base's own driver, the raw twin's.
const rawDriver = "sqlite3"

// fileDSN is the "file:" URI of path, with the characters that would end
// or escape its path (a fuzz seed's directory holds '#') %-escaped.
func fileDSN(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(filepath.ToSlash(path))
}

// effectiveDSN is the DSN cleolease-modernc opens the application's
// connections with: ParseDSN's SQLite DSN with the dialect's defaults.
func effectiveDSN(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := ncruces.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return base.Dialect{}.WithDefaults(cfg.SQLiteDSN, true)
}

// openDiffTwins opens modernc's own driver and cleolease-modernc on two
// fresh files, both pools holding one connection, so that "the first time
// on a connection" and "every later time" are both exercised.
func openDiffTwins(t testing.TB) (raw, cl *sql.DB) {
	t.Helper()
	dir := testdir.New(t)
	raw, err := sql.Open(rawDriver, effectiveDSN(t, fileDSN(filepath.Join(dir, "raw.db"))))
	if err != nil {
		t.Fatal(err)
	}
	cl, err = sql.Open(ncruces.DriverName, fileDSN(filepath.Join(dir, "cl.db")))
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sql.DB{raw, cl} {
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
	}
	return raw, cl
}

func TestDifferentialCases(t *testing.T) {
	cases := difftest.Cases()
	cases["column types of reads and of writes through Query"] = []difftest.Op{
		difftest.Seq("query", "INSERT INTO t(a, b, c, d, e) VALUES (1, 'x', x'00', ?, 1.5) RETURNING a, b, c, d, e, 1, NULL", difftest.Time),
		difftest.Seq("query", "SELECT a, b, c, d, e, 1, NULL FROM t"),
	}
	for name, ops := range cases {
		t.Run(name, func(t *testing.T) {
			if why, ok := diffSkips[name]; ok {
				t.Skip(why)
			}
			raw, cl := openDiffTwins(t)
			difftest.RunOn(t, raw, cl, withoutEmptyQueries(t, ops))
		})
	}
}

// TestDifferentialHarnessDetects makes sure the comparison can fail over
// modernc, and reads modernc's errors with their codes.
func TestDifferentialHarnessDetects(t *testing.T) {
	raw, cl := openDiffTwins(t)
	difftest.CheckDetects(t, raw, cl)
}

// FuzzDifferential is the root's FuzzDifferential over modernc. Run it with
//
//	go test -run '^$' -fuzz FuzzDifferential -fuzztime 10m .
func FuzzDifferential(f *testing.F) {
	for _, seed := range difftest.FuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := slices.DeleteFunc(difftest.DecodeOps(data), emptyQuery)
		if len(ops) == 0 {
			return
		}
		raw, cl := openDiffTwins(t)
		difftest.RunOn(t, raw, cl, ops)
	})
}

// TestDifferentialPreparedExecReturning: Exec of a prepared statement with
// RETURNING runs it to its end, as the base's own Exec does, and reports
// the base's LastInsertId and RowsAffected. internal/core once took go-sqlite3's
// path for it (one step through Query, then last_insert_rowid() and
// changes()), which over this base reported the previous statement's
// changes or did not run the statement at all.
func TestDifferentialPreparedExecReturning(t *testing.T) {
	raw, cl := openDiffTwins(t)
	difftest.RunOn(t, raw, cl, []difftest.Op{
		difftest.Seq("prepare-exec", "INSERT INTO t(a) VALUES (?), (?) RETURNING a, rowid", 1, 2),
		difftest.Seq("prepare-exec", "UPDATE t SET b = 'r' WHERE a > ? RETURNING a", 0),
		difftest.Seq("prepare-exec", "DELETE FROM t WHERE a = ? RETURNING a", 1),
		difftest.Seq("prepare-exec", "UPDATE t SET a = a + ? RETURNING a", 5),
		difftest.Seq("begin", ""),
		difftest.Seq("prepare-exec", "INSERT INTO t(a) VALUES (?) RETURNING a", 9),
		difftest.Seq("commit", ""),
		difftest.Seq("query", "SELECT rowid, a, b FROM t ORDER BY rowid"),
	})
}

// privateDSNs are DSNs of private databases: in memory and not shared, or
// the temporary on-disk database an empty file name opens. (ncruces's memdb
// VFS is not linked here: its package vfs/memdb registers it.)
var privateDSNs = []string{
	":memory:", "file::memory:", "file:pm?mode=memory", "file:pm?cache=private&mode=memory", "", "file:",
}

// TestDifferentialPrivateDatabases: a private database opens exactly as
// with the base alone (no lease, nothing else different), whether the pool
// holds one connection or any number (difftest.PrivateCases).
func TestDifferentialPrivateDatabases(t *testing.T) {
	cases := difftest.PrivateCases()
	for _, dsn := range privateDSNs {
		for _, maxOpen := range []int{1, 0} {
			t.Run(fmt.Sprintf("%q/max open %d", dsn, maxOpen), func(t *testing.T) {
				for name, ops := range cases {
					t.Run(name, func(t *testing.T) {
						if why, ok := diffSkips[name]; ok {
							t.Skip(why)
						}
						raw, err := sql.Open(rawDriver, effectiveDSN(t, dsn))
						if err != nil {
							t.Fatal(err)
						}
						cl, err := sql.Open(ncruces.DriverName, dsn)
						if err != nil {
							t.Fatal(err)
						}
						for _, db := range []*sql.DB{raw, cl} {
							db.SetMaxOpenConns(maxOpen)
							t.Cleanup(func() { db.Close() })
						}
						difftest.RunOn(t, raw, cl, withoutEmptyQueries(t, ops))
					})
				}
			})
		}
	}
}
