package cleolease_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// nativeConn returns the *sqlite3.SQLiteConn behind a value sql.Conn.Raw
// hands its callback, for either driver.
func nativeConn(dc any) *sqlite3.SQLiteConn {
	if s, ok := dc.(*sqlite3.SQLiteConn); ok {
		return s
	}
	return dc.(interface{ SQLiteConn() *sqlite3.SQLiteConn }).SQLiteConn()
}

// A DSN with _query_only=1 (go-sqlite3's read-only connection setting) on a
// database that has no lease tables yet (any file created without
// cleolease): go-sqlite3 reads it, and so does cleolease, which counts
// _query_only=1 as a read-only open (no lease engine, no lease tables).
func TestReviewQueryOnlyDSNOnPlainFile(t *testing.T) {
	dir := testdir.New(t)
	outcome := func(drv, name string) string {
		ctx := context.Background()
		p := filepath.Join(dir, name)
		setup, err := sql.Open("sqlite3", "file:"+p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := setup.Exec("CREATE TABLE t(a); INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		setup.Close()
		dsn := "file:" + p + "?_query_only=1"
		if drv == "sqlite3" {
			if dsn, err = cleolease.EffectiveSQLiteDSN(dsn); err != nil {
				t.Fatal(err)
			}
		}
		db, err := sql.Open(drv, dsn)
		if err != nil {
			return "open: " + err.Error()
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, "SELECT a FROM t")
		return fmtRows(ctx, rows, err)
	}
	if want, got := outcome("sqlite3", "raw.db"), outcome("cleolease", "cl.db"); want != got {
		t.Fatalf("SELECT with _query_only=1 differs\n go-sqlite3: %s\n cleolease:  %s", want, got)
	}
}

// BeginTx (read-only or not) on a *sql.Conn left inside a hand-written
// BEGIN: go-sqlite3 returns SQLite's own error, sqlite3.Error code 1 "cannot
// start a transaction within a transaction", and so does cleolease.
func TestReviewBeginTxInsideHandWrittenBegin(t *testing.T) {
	raw, cl := openTwins(t, "")
	outcome := func(db *sql.DB, opts *sql.TxOptions) string {
		ctx := context.Background()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		defer c.ExecContext(ctx, "ROLLBACK")
		tx, err := c.BeginTx(ctx, opts)
		if tx != nil {
			tx.Rollback()
		}
		return fmtErr(ctx, err)
	}
	for name, opts := range map[string]*sql.TxOptions{"default": nil, "read-only": {ReadOnly: true}} {
		t.Run(name, func(t *testing.T) {
			if want, got := outcome(raw, opts), outcome(cl, opts); want != got {
				t.Fatalf("BeginTx differs\n go-sqlite3: %s\n cleolease:  %s", want, got)
			}
		})
	}
}

// A write that touches only the TEMP schema (or an attached in-memory
// database) while another connection of the process holds the main file's
// write lock in a transaction: go-sqlite3 runs it at once (it locks only the
// temp database), and so does cleolease, which asks SQLite (EXPLAIN) whether
// a statement writes the main database before taking the lease.
func TestReviewTempWriteWaitsForMainWriter(t *testing.T) {
	dir := testdir.New(t)
	ctx := context.Background()
	outcome := func(drv string) string {
		dsn := "file:" + filepath.Join(dir, drv+".db") + "?_lease_wait=200ms&_busy_timeout=200"
		if drv == "sqlite3" {
			var err error
			if dsn, err = cleolease.EffectiveSQLiteDSN(dsn); err != nil {
				t.Fatal(err)
			}
		}
		db1, err := sql.Open(drv, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db1.Close()
		db2, err := sql.Open(drv, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db2.Close()
		db2.SetMaxOpenConns(1)
		for _, q := range []string{"CREATE TABLE t(a)"} {
			if _, err := db1.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []string{"CREATE TEMP TABLE scratch(x)", "ATTACH ':memory:' AS m", "CREATE TABLE m.mm(x)"} {
			if _, err := db2.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := db1.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		r1, err1 := db2.Exec("INSERT INTO scratch VALUES (1)")
		r2, err2 := db2.Exec("INSERT INTO m.mm VALUES (1)")
		return "temp: " + fmtResult(ctx, r1, err1) + "; attached memory: " + fmtResult(ctx, r2, err2)
	}
	if want, got := outcome("sqlite3"), outcome("cleolease"); want != got {
		t.Fatalf("TEMP write while main is write-locked differs\n go-sqlite3: %s\n cleolease:  %s", want, got)
	}
}
