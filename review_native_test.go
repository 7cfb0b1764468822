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
