package base_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/ncruces/internal/base"
)

func TestDescribe(t *testing.T) {
	b := base.For(nil)
	c := openConn(t, b, filepath.Join(testdir.New(t), "d.db"))
	for _, tc := range []struct {
		query string
		want  sqlbase.StmtInfo
	}{
		{"SELECT 1", sqlbase.StmtInfo{ReadOnly: true}},
		{"CREATE TABLE t(x); INSERT INTO t VALUES(1)", sqlbase.StmtInfo{Tail: " INSERT INTO t VALUES(1)"}},
		{"SELECT 1; -- c", sqlbase.StmtInfo{ReadOnly: true, Tail: " -- c"}},
		{" -- c", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{"/* c */ ;", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{"  ", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{"", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{"BEGIN", sqlbase.StmtInfo{ReadOnly: true}},
		{"SELECT 'a;b', ?1, :n; INSERT INTO u VALUES(?)", sqlbase.StmtInfo{ReadOnly: true, Inputs: 2, Tail: " INSERT INTO u VALUES(?)"}},
		{"PRAGMA user_version", sqlbase.StmtInfo{ReadOnly: true}},
		{"PRAGMA user_version = 3", sqlbase.StmtInfo{}},
	} {
		got, err := b.Describe(c, tc.query)
		if err != nil || got != tc.want {
			t.Errorf("Describe(%q) = %+v, %v; want %+v", tc.query, got, err, tc.want)
		}
	}
	// Nothing ran: no table, no transaction, user_version 0.
	if n := queryValue(t, c, "SELECT count(*) FROM sqlite_schema"); n != int64(0) {
		t.Errorf("%v schema objects after Describe; want 0", n)
	}
	if !b.AutoCommit(c) {
		t.Error("a transaction is open after Describe(BEGIN)")
	}
	if v := queryValue(t, c, "PRAGMA user_version"); v != int64(0) {
		t.Errorf("user_version %v after Describe; want 0", v)
	}

	execNoArgs(t, c, "CREATE TABLE t(x, y)")
	for query, want := range map[string]sqlbase.StmtInfo{
		"INSERT INTO t VALUES(?, ?)":   {Inputs: 2},
		"INSERT INTO t VALUES(:a, @b)": {Inputs: 2},
		"UPDATE t SET x = ?3":          {Inputs: 3},
		"SELECT * FROM t WHERE x = ?":  {ReadOnly: true, Inputs: 1},
		"DELETE FROM t":                {},
	} {
		if got, err := b.Describe(c, query); err != nil || got != want {
			t.Errorf("Describe(%q) = %+v, %v; want %+v", query, got, err, want)
		}
	}

	// A statement SQLite cannot prepare: ncruces's own error, the one its
	// PrepareContext returns.
	for _, bad := range []string{"SELEC 1", "SELECT * FROM nope", "INSERT INTO t VALUES(1)"} {
		_, err := b.Describe(c, bad)
		var se *sqlite3.Error
		if !errors.As(err, &se) || err != error(se) || se.Code() != sqlite3.ERROR {
			t.Fatalf("Describe(%q) = %T %v; want ncruces's *sqlite3.Error, code 1", bad, err, err)
		}
		_, prepErr := c.(*base.Conn).Unwrap().PrepareContext(context.Background(), bad)
		if prepErr == nil || err.Error() != prepErr.Error() {
			t.Errorf("Describe(%q)'s error %q; ncruces's PrepareContext's %v", bad, err, prepErr)
		}
		if code, ok := sqlbase.Code(err); !ok || code.Code != sqlbase.Error || code.Err != err {
			t.Errorf("sqlbase.Code(%v) = %+v, %v", err, code, ok)
		}
	}
}

// DescribeStmt reads ncruces's statement (one statement: ncruces refuses
// a second) from its own handle, running nothing.
func TestDescribeStmt(t *testing.T) {
	ctx := context.Background()
	b := base.For(nil)
	c := openConn(t, b, filepath.Join(testdir.New(t), "d.db"))
	execNoArgs(t, c, "CREATE TABLE t(x)")
	for _, tc := range []struct {
		query string
		want  sqlbase.StmtInfo
	}{
		{"SELECT 1", sqlbase.StmtInfo{ReadOnly: true, Runs: 1}},
		{"SELECT ?1, ?2;", sqlbase.StmtInfo{ReadOnly: true, Inputs: 2, Runs: 1}},
		{"SELECT 1; -- c", sqlbase.StmtInfo{ReadOnly: true, Runs: 1}},
		{"INSERT INTO t VALUES(?)", sqlbase.StmtInfo{Inputs: 1, Runs: 1}},
		{"PRAGMA user_version = 7", sqlbase.StmtInfo{Runs: 1}},
		{"BEGIN", sqlbase.StmtInfo{ReadOnly: true, Runs: 1}},
		{"BEGIN IMMEDIATE", sqlbase.StmtInfo{Runs: 1}}, // sqlite3_stmt_readonly: it takes the write lock
		{" -- only a comment", sqlbase.StmtInfo{Empty: true, ReadOnly: true, Runs: 1}},
	} {
		st, err := c.PrepareContext(ctx, tc.query)
		if err != nil {
			t.Fatalf("Prepare(%q): %v", tc.query, err)
		}
		if got := b.DescribeStmt(c, st, tc.query); got != tc.want {
			t.Errorf("DescribeStmt(%q) = %+v; want %+v", tc.query, got, tc.want)
		}
		// ncruces's own statement, unwrapped, reads the same.
		if got := b.DescribeStmt(c, st.(*base.Stmt).Unwrap(), tc.query); got != tc.want {
			t.Errorf("DescribeStmt(%q) of ncruces's statement = %+v; want %+v", tc.query, got, tc.want)
		}
		st.Close()
	}
	if v := queryValue(t, c, "PRAGMA user_version"); v != int64(0) {
		t.Errorf("user_version %v: something ran", v)
	}
	if n := queryValue(t, c, "SELECT count(*) FROM t"); n != int64(0) {
		t.Errorf("%v rows in t: something ran", n)
	}
	if !b.AutoCommit(c) {
		t.Error("a transaction is open: something ran")
	}
	// ncruces refuses a string with a second statement.
	if _, err := c.PrepareContext(ctx, "SELECT 1; SELECT 2"); err == nil || err.Error() != "sqlite3: multiple statements" {
		t.Errorf("Prepare of two statements: %v; want ncruces's sqlite3: multiple statements", err)
	}

	// A statement of another shape: described by preparing the query
	// again; one that does not prepare counts as a possible write of
	// several statements, never fenced alone.
	if got := b.DescribeStmt(c, otherStmt{}, "SELECT ?"); got != (sqlbase.StmtInfo{ReadOnly: true, Inputs: 1, Runs: 1}) {
		t.Errorf("DescribeStmt of another statement type = %+v", got)
	}
	if got := b.DescribeStmt(c, otherStmt{}, "SELEC 1"); got.ReadOnly || got.Empty || got.Runs <= 1 {
		t.Errorf("DescribeStmt of another statement type, bad query = %+v; want a write of several statements", got)
	}
}

// otherStmt is a statement that is not ncruces's.
type otherStmt struct{ driver.Stmt }

// otherConn is a connection that is not ncruces's (no Raw handle).
type otherConn struct {
	sqlbase.Conn
	prepared []string
}

func (o *otherConn) Prepare(q string) (driver.Stmt, error) {
	o.prepared = append(o.prepared, q)
	if strings.HasPrefix(q, "SELEC ") {
		return nil, errors.New("other syntax error")
	}
	return closeStmt{}, nil
}

type closeStmt struct{ driver.Stmt }

func (closeStmt) Close() error { return nil }

// Without ncruces's handle, Describe fails closed (a possible write, no
// tail) with the connection's own error for a bad statement, and
// AutoCommit says a transaction is open: the driver then refuses the
// connection's writes rather than run one outside the lease.
func TestFailsClosedWithoutHandle(t *testing.T) {
	b := base.For(nil)
	o := &otherConn{}
	info, err := b.Describe(o, "SELECT 1; SELECT 2")
	if err != nil || info != (sqlbase.StmtInfo{}) {
		t.Errorf("Describe = %+v, %v; want a write with no tail", info, err)
	}
	if _, err := b.Describe(o, "SELEC 1"); err == nil || err.Error() != "other syntax error" {
		t.Errorf("Describe of a bad statement: %v; want the connection's error", err)
	}
	if b.AutoCommit(o) {
		t.Error("AutoCommit without a handle: true")
	}
}

func TestAutoCommit(t *testing.T) {
	b := base.For(nil)
	c := openConn(t, b, filepath.Join(testdir.New(t), "d.db"))
	if !b.AutoCommit(c) {
		t.Fatal("AutoCommit outside a transaction: false")
	}
	execNoArgs(t, c, "BEGIN")
	if b.AutoCommit(c) {
		t.Error("AutoCommit inside BEGIN: true")
	}
	execNoArgs(t, c, "CREATE TABLE t(x)")
	execNoArgs(t, c, "COMMIT")
	if !b.AutoCommit(c) {
		t.Error("AutoCommit after COMMIT: false")
	}
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.AutoCommit(c) {
		t.Error("AutoCommit inside BeginTx: true")
	}
	execNoArgs(t, c, "INSERT INTO t VALUES(1)")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !b.AutoCommit(c) {
		t.Error("AutoCommit after Rollback: false")
	}
	if n := queryValue(t, c, "SELECT count(*) FROM t"); n != int64(0) {
		t.Errorf("%v rows after Rollback", n)
	}
}

// Open's probe answers read-only for a mode=ro or immutable file and
// writable for another, asked before Init runs; Init's authorizer (which
// sees every statement SQLite prepares) sees nothing of Open.
func TestOpenProbe(t *testing.T) {
	p := newFile(t)
	var inits, authorized atomic.Int64
	b := base.For(&base.Callbacks{Init: func(c *sqlite3.Conn) error {
		inits.Add(1)
		return c.SetAuthorizer(func(sqlite3.AuthorizerActionCode, string, string, string, string) sqlite3.AuthorizerReturnCode {
			authorized.Add(1)
			return sqlite3.AUTH_OK
		})
	}})
	for _, tc := range []struct {
		dsn          string
		probe, wantR bool
	}{
		{fileURI(p, "mode=ro"), true, true},
		{fileURI(p, "immutable=1"), true, true},
		{fileURI(p, "_pragma=query_only(1)"), true, false}, // writable file, a query-only connection
		{fileURI(p, ""), true, false},
		{p, true, false},
		{fileURI(p, "mode=ro"), false, false}, // not asked
	} {
		before := inits.Load()
		authorized.Store(0)
		c, ro, err := b.Open(tc.dsn, tc.probe)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.dsn, err)
		}
		if ro != tc.wantR {
			t.Errorf("Open(%q, %v): readOnly %v, want %v", tc.dsn, tc.probe, ro, tc.wantR)
		}
		if inits.Load() != before+1 {
			t.Errorf("Open(%q): Init ran %d times", tc.dsn, inits.Load()-before)
		}
		if n := authorized.Load(); n != 0 {
			t.Errorf("Open(%q, %v): Init's authorizer saw %d calls from Open", tc.dsn, tc.probe, n)
		}
		queryValue(t, c, "SELECT count(*) FROM t")
		if authorized.Load() == 0 {
			t.Errorf("Open(%q): Init's authorizer is not installed", tc.dsn)
		}
		c.Close()
	}
}

// Open runs Init after the DSN's _pragma values, on ncruces's handle of
// the connection it returns; Init's error, as it returned it, fails the
// open; Term runs when the connection closes, once.
func TestOpenRunsCallbacks(t *testing.T) {
	p := newFile(t)
	var handles []*sqlite3.Conn
	var busy []int64
	var terms []*sqlite3.Conn
	b := base.For(&base.Callbacks{
		Init: func(c *sqlite3.Conn) error {
			handles = append(handles, c)
			s, _, err := c.Prepare("PRAGMA busy_timeout")
			if err != nil {
				return err
			}
			defer s.Close()
			s.Step()
			busy = append(busy, s.ColumnInt64(0))
			return s.Err()
		},
		Term: func(c *sqlite3.Conn) error { terms = append(terms, c); return nil },
	})
	if !b.Hooked() {
		t.Error("Hooked: false with an Init callback")
	}
	c, _, err := b.Open(fileURI(p, "_pragma=busy_timeout(4321)"), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(handles) != 1 || handles[0] != c.(*base.Conn).Raw() || c.(*base.Conn).Raw() != c.(*base.Conn).Unwrap().Raw() {
		t.Fatalf("Init ran on %v; want once, on the connection's handle %p", handles, c.(*base.Conn).Raw())
	}
	if busy[0] != 4321 {
		t.Errorf("Init saw busy_timeout %d; want the DSN's 4321 (Init runs after the _pragma values)", busy[0])
	}
	if len(terms) != 0 {
		t.Errorf("Term ran %d times before the close", len(terms))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(terms) != 1 || terms[0] != handles[0] {
		t.Errorf("Term ran %d times at the close; want once, on the connection's handle", len(terms))
	}

	// Init's error fails the open, as it is; the connection is closed
	// (Term, registered after Init, does not run).
	refused := errors.New("refused by Init")
	terms = nil
	var closed atomic.Int64
	b2 := base.For(&base.Callbacks{
		Init: func(c *sqlite3.Conn) error {
			if err := c.Trace(sqlite3.TRACE_CLOSE, func(sqlite3.TraceEvent, any, any) error { closed.Add(1); return nil }); err != nil {
				return err
			}
			return refused
		},
		Term: func(c *sqlite3.Conn) error { terms = append(terms, c); return nil },
	})
	c2, ro, err := b2.Open(p, true)
	if err != refused || c2 != nil || ro {
		t.Fatalf("Open with a failing Init = %v, %v, %v; want nil, false and Init's error itself", c2, ro, err)
	}
	if closed.Load() != 1 || len(terms) != 0 {
		t.Errorf("after a failing Init: closed %d times, Term ran %d times; want 1, 0", closed.Load(), len(terms))
	}

	// Errors of the open itself are ncruces's own.
	missing := filepath.Join(testdir.New(t), "missing.db")
	_, _, err = base.For(nil).Open(fileURI(missing, "mode=ro"), true)
	var se *sqlite3.Error
	if !errors.As(err, &se) || se.Code() != sqlite3.CANTOPEN {
		t.Errorf("Open of a missing mode=ro file: %T %v; want ncruces's *sqlite3.Error, CANTOPEN", err, err)
	}
	if _, _, err := base.For(nil).Open("file:x.db?_txlock=bogus", false); err == nil || err.Error() != "sqlite3: invalid _txlock: bogus" {
		t.Errorf("Open with a bad _txlock: %v; want ncruces's error", err)
	}
}
