package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
)

// nativeConn returns the *sqlite3.SQLiteConn behind a value sql.Conn.Raw
// hands its callback, for either driver.
func nativeConn(dc any) *sqlite3.SQLiteConn {
	if s, ok := dc.(*sqlite3.SQLiteConn); ok {
		return s
	}
	return dc.(interface{ SQLiteConn() *sqlite3.SQLiteConn }).SQLiteConn()
}

// sql.Conn.Raw: go-sqlite3 hands its callback the *sqlite3.SQLiteConn
// (go-sqlite3's own TestBeginTxCancel and TestStmtReadonly assert
// dc.(*SQLiteConn)); cleolease hands a *cleolease.outerConn, so existing code
// doing dc.(*sqlite3.SQLiteConn) fails or panics. The README documents the
// cleolease.Conn interface under "Reaching the native connection", but the
// closed list of differences does not have it.
func TestReviewRawIsNotSQLiteConn(t *testing.T) {
	raw, cl := openTwins(t, "")
	outcome := func(db *sql.DB) string {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var ok bool
		if err := c.Raw(func(dc any) error { _, ok = dc.(*sqlite3.SQLiteConn); return nil }); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("dc.(*sqlite3.SQLiteConn) ok=%v", ok)
	}
	if want, got := outcome(raw), outcome(cl); want != got {
		t.Fatalf("Raw differs\n go-sqlite3: %s\n cleolease:  %s", want, got)
	}
}

// An authorizer registered on the connection (sqlite3.SQLiteConn.
// RegisterAuthorizer, through Raw or a base driver's ConnectHook) is
// consulted for the driver's own statements too: BEGIN IMMEDIATE, the
// fencing SELECT on _writer_leases, COMMIT/ROLLBACK. An authorizer that
// forbids transaction statements, or reads of tables it does not know (a
// common sandbox for user SQL), lets go-sqlite3's autocommit INSERT through
// but makes every cleolease write fail with SQLITE_AUTH.
func TestReviewAuthorizerSeesDriverStatements(t *testing.T) {
	for _, tc := range []struct {
		name string
		deny func(op int, a1 string) bool
	}{
		{"deny transaction statements", func(op int, _ string) bool { return op == sqlite3.SQLITE_TRANSACTION }},
		{"deny reads of unknown tables", func(op int, a1 string) bool {
			return op == sqlite3.SQLITE_READ && a1 != "t" && a1 != "p" && a1 != "ch"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, cl := openTwins(t, "")
			outcome := func(db *sql.DB) string {
				ctx := context.Background()
				if _, err := db.Exec(diffSchema); err != nil {
					t.Fatal(err)
				}
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.Raw(func(dc any) error {
					nativeConn(dc).RegisterAuthorizer(func(op int, a1, _, _ string) int {
						if tc.deny(op, a1) {
							return sqlite3.SQLITE_DENY
						}
						return sqlite3.SQLITE_OK
					})
					return nil
				})
				res, err := c.ExecContext(ctx, "INSERT INTO t(a) VALUES (1)")
				return fmtResult(ctx, res, err)
			}
			if want, got := outcome(raw), outcome(cl); want != got {
				t.Fatalf("INSERT under an authorizer differs\n go-sqlite3: %s\n cleolease:  %s", want, got)
			}
		})
	}
}

// A DSN with _query_only=1 (go-sqlite3's read-only connection setting) on a
// database that has no lease tables yet (any file created without
// cleolease): go-sqlite3 reads it; cleolease's first connect fails with
// "attempt to write a readonly database" (its lease engine creates its tables
// through a connection opened with the same DSN), so even Ping and SELECT
// fail. Only mode=ro is recognised as a read-only open.
func TestReviewQueryOnlyDSNOnPlainFile(t *testing.T) {
	dir := t.TempDir()
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
// start a transaction within a transaction"; cleolease returns
// ErrForeignTransaction, which is no sqlite3.Error. The README's row covers a
// write inside such a transaction (which go-sqlite3 runs); here both refuse,
// with different errors.
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
// temp database); cleolease judges it a write (sqlite3_stmt_readonly is
// false), waits for the lease held by that transaction (_lease_wait), then
// BEGIN IMMEDIATE waits busy_timeout for main's write lock and fails with
// SQLITE_BUSY. With the defaults that is 30 s + 30 s before "database is
// locked" for a scratch-table insert. (Short waits here to keep it quick.)
func TestReviewTempWriteWaitsForMainWriter(t *testing.T) {
	dir := t.TempDir()
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
