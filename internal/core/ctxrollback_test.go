package core

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
)

// lateCtxBase is the go-sqlite3 base with modernc's way with a context
// that ends while a statement runs: SQLite finishes the statement, and
// the base reports the context's error all the same (modernc.org/sqlite's
// stmt.exec). Statements marked lateCtxMark do that here.
type lateCtxBase struct{ sqlbase.Driver }

const lateCtxMark = "/* late ctx */"

func (b lateCtxBase) Open(dsn string, probe bool) (sqlbase.Conn, bool, error) {
	c, ro, err := b.Driver.Open(dsn, probe)
	if err != nil {
		return nil, false, err
	}
	return lateCtxConn{c}, ro, nil
}

// The base's questions about a connection go to go-sqlite3's own.
func (b lateCtxBase) Describe(c sqlbase.Conn, query string) (sqlbase.StmtInfo, error) {
	return b.Driver.Describe(c.(lateCtxConn).Conn, query)
}

func (b lateCtxBase) DescribeStmt(c sqlbase.Conn, st driver.Stmt, query string) sqlbase.StmtInfo {
	return b.Driver.DescribeStmt(c.(lateCtxConn).Conn, st, query)
}

func (b lateCtxBase) AutoCommit(c sqlbase.Conn) bool {
	return b.Driver.AutoCommit(c.(lateCtxConn).Conn)
}

type lateCtxConn struct{ sqlbase.Conn }

func (c lateCtxConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.ExecContext(ctx, query, args)
	if err == nil && strings.Contains(query, lateCtxMark) {
		return nil, context.DeadlineExceeded
	}
	return r, err
}

// A leased autocommit write whose base reports the context's end after
// SQLite ran the statement is rolled back, not committed: the caller was
// told it failed (the chaos ledger found the commit over modernc as an
// acknowledged failure whose entry was written).
func TestContextErrorRollsBackTheStatement(t *testing.T) {
	path := filepath.Join(testdir.New(t), "ctx.db")
	cfg := NewConfig()
	cfg.SQLiteDSN = "file:" + path
	cfg.BaseDriver = lateCtxBase{mattn.For(nil)}
	c, err := NewConnector(cfg, dialect, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := leasectx.WithLane(context.Background(), "main", "t")
	if _, err := db.ExecContext(ctx, "CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1) "+lateCtxMark); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the marked INSERT: %v, want context.DeadlineExceeded", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	var got []int
	rows, err := db.QueryContext(ctx, "SELECT x FROM t ORDER BY x")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var x int
		rows.Scan(&x)
		got = append(got, x)
	}
	rows.Close()
	if len(got) != 1 || got[0] != 2 {
		t.Fatalf("rows %v: want only the second INSERT's 2 (the one that failed with its context's error rolled back)", got)
	}
}
