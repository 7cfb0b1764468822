package core

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
)

// panicMark in a statement's text makes panickingBase's connection panic
// with panicValue once the base has run the statement: a panic raised in
// the base driver's Go code inside cleolease's leased write, after SQLite
// wrote. (A Go callback of go-sqlite3's that panics cannot stand in: it
// leaves the connection's SQLite mutex held by the thread that ran it, and
// the connection hangs at its next use, with or without cleolease.)
const panicMark = "/* panic */"

var panicValue = new(int)

// panickingBase is go-sqlite3's base whose application connections panic
// after running a statement marked with panicMark.
type panickingBase struct{ *mattn.Base }

type panickingConn struct{ sqlbase.Conn }

type panickingStmt struct {
	driver.Stmt
	query string
}

func unwrapConn(c sqlbase.Conn) sqlbase.Conn {
	if p, ok := c.(panickingConn); ok {
		return p.Conn
	}
	return c
}

func (b panickingBase) Open(dsn string, probe bool) (sqlbase.Conn, bool, error) {
	c, ro, err := b.Base.Open(dsn, probe)
	if err != nil {
		return nil, ro, err
	}
	return panickingConn{c}, ro, nil
}

func (b panickingBase) Describe(c sqlbase.Conn, q string) (sqlbase.StmtInfo, error) {
	return b.Base.Describe(unwrapConn(c), q)
}

func (b panickingBase) DescribeStmt(c sqlbase.Conn, st driver.Stmt, q string) sqlbase.StmtInfo {
	if p, ok := st.(panickingStmt); ok {
		st = p.Stmt
	}
	return b.Base.DescribeStmt(unwrapConn(c), st, q)
}

func (b panickingBase) AutoCommit(c sqlbase.Conn) bool { return b.Base.AutoCommit(unwrapConn(c)) }

// panicIfMarked panics with panicValue when query carries panicMark,
// closing rows first (they would keep SQLite's statement, and so the
// connection and its files, open after the connection is discarded).
func panicIfMarked(query string, rows driver.Rows) {
	if strings.Contains(query, panicMark) {
		if rows != nil {
			rows.Close()
		}
		panic(panicValue)
	}
}

func (c panickingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.ExecContext(ctx, q, args)
	panicIfMarked(q, nil)
	return r, err
}

func (c panickingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.QueryContext(ctx, q, args)
	panicIfMarked(q, r)
	return r, err
}

func (c panickingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return panickingStmt{st, q}, nil
}

func (s panickingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	panicIfMarked(s.query, nil)
	return r, err
}

func (s panickingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	panicIfMarked(s.query, r)
	return r, err
}

// A panic unwinding through a leased write on go-sqlite3, recovered as
// net/http recovers a handler's, leaves neither the lane nor SQLite's write
// lock held: what the write did is rolled back, and another process that
// requires the lease writes at once (it fails, rather than waits, were
// either still held). The panic goes on with its own value. Inside a
// transaction the application began, the transaction is rolled back: its
// later statements and its Commit fail with an error that wraps
// sql.ErrTxDone, its Rollback succeeds. (The same test runs over modernc
// and ncruces in their modules, with panics of their own.)
func TestRecoveredPanicReleasesTheLease(t *testing.T) {
	path := filepath.Join(testdir.New(t), "p.db")
	cfg, err := ParseDSN("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseDriver = panickingBase{mattn.For(nil)}
	db, err := OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE log(v INTEGER); CREATE TABLE other(v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inTx := func(end func(*sql.Tx) error, wantEnd bool) func() {
		return func() {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (-1)"); err != nil {
				t.Fatal(err)
			}
			p := basetest.Recovered(func() { tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (1) "+panicMark) })
			if _, err := tx.ExecContext(ctx, "INSERT INTO log(v) VALUES (-2)"); !errors.Is(err, sql.ErrTxDone) {
				t.Errorf("a statement of the rolled-back transaction: %v, want an error wrapping sql.ErrTxDone", err)
			}
			if err := end(tx); (err == nil) != wantEnd || (err != nil && !errors.Is(err, sql.ErrTxDone)) {
				t.Errorf("the end of the rolled-back transaction: %v, want success %v or an error wrapping sql.ErrTxDone", err, wantEnd)
			}
			panic(p)
		}
	}
	written := 0
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"an autocommit Exec", func() { db.ExecContext(ctx, "INSERT INTO log(v) VALUES (1) "+panicMark) }},
		// A Query through the driver (inside sql.Conn.Raw): a panic inside
		// DB.Query would leave database/sql's connection taken for ever.
		{"an autocommit Query", func() { basetest.DriverQuery(ctx, db, "INSERT INTO log(v) VALUES (1) RETURNING v "+panicMark) }},
		{"a prepared Exec, through the driver", func() {
			basetest.DriverPreparedExec(ctx, db, "INSERT INTO log(v) VALUES (?) "+panicMark, driver.NamedValue{Ordinal: 1, Value: int64(1)})
		}},
		// A prepared Exec and a Query inside a transaction, through the
		// driver: database/sql keeps a Tx's lock after a panic in a Query
		// or in a Stmt's Exec, so the Tx could neither commit nor roll back
		// (with or without cleolease); sql.Conn.Raw discards the connection
		// instead.
		{"a prepared Exec in a transaction, through the driver", func() {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Raw(func(dc any) error {
				if _, err := dc.(driver.ConnBeginTx).BeginTx(ctx, driver.TxOptions{}); err != nil {
					return err
				}
				st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, "INSERT INTO log(v) VALUES (?) "+panicMark)
				if err != nil {
					return err
				}
				defer st.Close()
				_, err = st.(driver.StmtExecContext).ExecContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
				return err
			})
		}},
		{"a Query in a transaction, through the driver", func() {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Raw(func(dc any) error {
				if _, err := dc.(driver.ConnBeginTx).BeginTx(ctx, driver.TxOptions{}); err != nil {
					return err
				}
				rows, err := dc.(driver.QueryerContext).QueryContext(ctx, "INSERT INTO log(v) VALUES (1) RETURNING v "+panicMark, nil)
				if err == nil {
					rows.Close()
				}
				return err
			})
		}},
		{"a transaction's Exec, then Commit", inTx((*sql.Tx).Commit, false)},
		{"a transaction's Exec, then Rollback", inTx((*sql.Tx).Rollback, true)},
	} {
		if p := basetest.Recovered(c.run); p != panicValue {
			t.Fatalf("%s: recovered %v, want the base's own panic value", c.name, p)
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM log").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("after a panic in %s the log holds %d rows, want none: the write was not rolled back", c.name, n)
		}
		k := proctest.Start(t, coreRoleEnv+"=write", "CLEOLEASE_DSN=file:"+path+"?_lease_mode=require&_lease_wait=20s&_busy_timeout=0", proctest.GoraceNoExitSleep())
		if got := k.Expect(""); got != "done" {
			t.Fatalf("after a panic in %s, another process could not write: %q", c.name, got)
		}
		written++
		if err := db.QueryRow("SELECT count(*) FROM other").Scan(&n); err != nil || n != written {
			t.Fatalf("the other process's rows: %d (%v), want %d", n, err, written)
		}
	}
}
