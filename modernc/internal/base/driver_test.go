package base

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
)

// fileURI returns a "file:" URI naming path, with query.
func fileURI(path, query string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:///C:/…
	}
	return (&url.URL{Scheme: "file", Path: p, RawQuery: query}).String()
}

// openConn opens dsn on b without the probe, closed when the test ends.
func openConn(t *testing.T, b *Base, dsn string) sqlbase.Conn {
	t.Helper()
	c, _, err := b.Open(dsn, false)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exec(t *testing.T, c sqlbase.Conn, query string) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), query, nil); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// queryValue returns the first column of the first row of query.
func queryValue(t *testing.T, c sqlbase.Conn, query string) driver.Value {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query, nil)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	v := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v[0]
}

// newFile creates a database file holding table t(x) and returns its path.
func newFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(testdir.New(t), "d.db")
	c, _, err := For(&sqlite.Driver{}).Open(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exec(t, c, "CREATE TABLE t(x)")
	return p
}

// The fields Describe, AutoCommit and Hooked read through reflection are
// where modernc v1.62.0 keeps them: a modernc whose layout differs fails
// here, not silently closed in production.
func TestHandlesOfModerncConn(t *testing.T) {
	drv := &sqlite.Driver{}
	c := openConn(t, For(drv), ":memory:")
	tls, db, known := handles(c)
	if !known || tls == nil || db == 0 {
		t.Fatalf("handles(%T) = %p, %#x, %v: modernc's conn layout (db uintptr, tls *libc.TLS) changed", c, tls, db, known)
	}
	if _, ok := c.(readOnlyAsker); !ok {
		t.Fatalf("%T has no IsReadOnly: Open would probe with SQL", c)
	}
	f := reflect.ValueOf(drv).Elem().FieldByName("connectionHooks")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem() != hookFnType {
		t.Fatalf("sqlite.Driver has no connectionHooks []ConnectionHookFn: Hooked is always true")
	}
	// Closed, the connection has no handle.
	c2, _, err := For(drv).Open(":memory:", false)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if tls, db, known := handles(c2); !known || tls != nil || db != 0 {
		t.Errorf("handles of a closed connection = %p, %#x, %v", tls, db, known)
	}
	b := For(drv)
	if _, err := b.Describe(c2, "SELECT 1"); err != driver.ErrBadConn {
		t.Errorf("Describe on a closed connection: %v", err)
	}
	if b.AutoCommit(c2) {
		t.Error("AutoCommit on a closed connection: true")
	}
}

// fakeConn is a connection that is not modernc's.
type fakeConn struct {
	sqlbase.Conn
	prepared []string
}

func (f *fakeConn) Prepare(q string) (driver.Stmt, error) {
	f.prepared = append(f.prepared, q)
	if strings.HasPrefix(q, "SELEC ") {
		return nil, errors.New("fake syntax error")
	}
	return fakeStmt{}, nil
}

type fakeStmt struct{ driver.Stmt }

func (fakeStmt) Close() error { return nil }

// Without the handle, Describe fails closed (a write, no tail), still
// returning the driver's own error for a bad statement; AutoCommit says a
// transaction is open; nothing panics.
func TestFailsClosedWithoutHandle(t *testing.T) {
	b := For(&sqlite.Driver{})
	f := &fakeConn{}
	info, err := b.Describe(f, "SELECT 1; SELECT 2")
	if err != nil || info != (sqlbase.StmtInfo{}) {
		t.Errorf("Describe = %+v, %v; want a write with no tail", info, err)
	}
	if _, err := b.Describe(f, "SELEC 1"); err == nil || err.Error() != "fake syntax error" {
		t.Errorf("Describe of a bad statement: %v; want the driver's error", err)
	}
	if got := b.DescribeStmt(f, fakeStmt{}, "SELECT 1"); got.ReadOnly || got.Empty {
		t.Errorf("DescribeStmt = %+v; want a write", got)
	}
	if b.AutoCommit(f) {
		t.Error("AutoCommit without a handle: true")
	}
	if _, _, known := handles(nil); known {
		t.Error("handles(nil): known")
	}
}

func TestDescribe(t *testing.T) {
	b := For(&sqlite.Driver{})
	c := openConn(t, b, filepath.Join(testdir.New(t), "d.db"))
	for _, tc := range []struct {
		query string
		want  sqlbase.StmtInfo
	}{
		{"CREATE TABLE t(x); INSERT INTO t VALUES(1)", sqlbase.StmtInfo{Tail: " INSERT INTO t VALUES(1)"}},
		{"SELECT 1; -- c", sqlbase.StmtInfo{ReadOnly: true, Tail: " -- c"}},
		{" -- c", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{"BEGIN", sqlbase.StmtInfo{ReadOnly: true}},
		{"  ", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{"", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
		{";;SELECT 1", sqlbase.StmtInfo{ReadOnly: true}}, // SQLite skips empty statements
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

	exec(t, c, "CREATE TABLE t(x, y)")
	if got, err := b.Describe(c, "INSERT INTO t VALUES(?, ?)"); err != nil || got != (sqlbase.StmtInfo{Inputs: 2}) {
		t.Errorf("Describe(INSERT with 2 parameters) = %+v, %v", got, err)
	}

	// A statement SQLite cannot prepare: modernc's own error, the one its
	// Exec returns.
	_, err := b.Describe(c, "SELEC 1")
	var se *sqlite.Error
	if !errors.As(err, &se) || err != error(se) || se.Code() != sqlbase.Error {
		t.Fatalf("Describe(SELEC 1) = %T %v; want modernc's *sqlite.Error, code 1", err, err)
	}
	_, execErr := c.ExecContext(context.Background(), "SELEC 1", nil)
	if execErr == nil || err.Error() != execErr.Error() {
		t.Errorf("Describe's error %q; Exec's %v", err, execErr)
	}
	if code, ok := sqlbase.Code(err); !ok || code.Code != sqlbase.Error || code.Err != err {
		t.Errorf("sqlbase.Code(%v) = %+v, %v", err, code, ok)
	}
}

// A modernc statement prepared from several statements runs them all:
// DescribeStmt covers them all.
func TestDescribeStmtCoversScript(t *testing.T) {
	b := For(&sqlite.Driver{})
	c := openConn(t, b, filepath.Join(testdir.New(t), "d.db"))
	exec(t, c, "CREATE TABLE t(x)")
	for _, tc := range []struct {
		query string
		want  sqlbase.StmtInfo
	}{
		{"SELECT 1", sqlbase.StmtInfo{ReadOnly: true, Runs: 1}},
		{"SELECT 1; SELECT ?1, ?2;", sqlbase.StmtInfo{ReadOnly: true, Inputs: 2, Tail: " SELECT ?1, ?2;", Runs: 2}},
		{"SELECT 1; INSERT INTO t VALUES(1)", sqlbase.StmtInfo{Tail: " INSERT INTO t VALUES(1)", Runs: 2}},
		{" -- c\n; SELECT 1; DELETE FROM t", sqlbase.StmtInfo{Tail: " DELETE FROM t", Runs: 2}},
		{"CREATE TABLE u(x); SELECT * FROM u", sqlbase.StmtInfo{Tail: " SELECT * FROM u", Runs: 2}},
		{"SELECT 1; PRAGMA user_version = 7", sqlbase.StmtInfo{Tail: " PRAGMA user_version = 7", Runs: 2}},
		{" -- only a comment", sqlbase.StmtInfo{Empty: true, ReadOnly: true}},
	} {
		st, err := c.PrepareContext(context.Background(), tc.query)
		if err != nil {
			t.Fatalf("Prepare(%q): %v", tc.query, err)
		}
		got := b.DescribeStmt(c, st, tc.query)
		st.Close()
		if got != tc.want {
			t.Errorf("DescribeStmt(%q) = %+v; want %+v", tc.query, got, tc.want)
		}
	}
	if v := queryValue(t, c, "PRAGMA user_version"); v != int64(0) {
		t.Errorf("user_version %v: DescribeStmt prepared a later PRAGMA", v)
	}
	if n := queryValue(t, c, "SELECT count(*) FROM t"); n != int64(0) {
		t.Errorf("%v rows in t: something ran", n)
	}
}

func TestAutoCommit(t *testing.T) {
	b := For(&sqlite.Driver{})
	c := openConn(t, b, filepath.Join(testdir.New(t), "d.db"))
	if !b.AutoCommit(c) {
		t.Fatal("AutoCommit outside a transaction: false")
	}
	exec(t, c, "BEGIN")
	if b.AutoCommit(c) {
		t.Error("AutoCommit inside BEGIN: true")
	}
	exec(t, c, "CREATE TABLE t(x)")
	exec(t, c, "COMMIT")
	if !b.AutoCommit(c) {
		t.Error("AutoCommit after COMMIT: false")
	}
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, c, "INSERT INTO t VALUES(1)")
	if b.AutoCommit(c) {
		t.Error("AutoCommit inside BeginTx: true")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !b.AutoCommit(c) {
		t.Error("AutoCommit after Rollback: false")
	}
}

// authorizerHook returns a connection hook that installs an authorizer
// counting its calls into n.
func authorizerHook(n *atomic.Int64) sqlite.ConnectionHookFn {
	return func(conn sqlite.ExecQuerierContext, _ string) error {
		return conn.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(
			func(sqlite.AuthorizerActionCode, string, string, string, string) sqlite.AuthorizerReturnCode {
				n.Add(1)
				return sqlite.AuthorizerOK
			})
	}
}

// Open's probe answers read-only for a mode=ro file and writable for
// another, and the application's hook (an authorizer counting every
// statement SQLite prepares) sees nothing of it.
func TestOpenProbe(t *testing.T) {
	p := newFile(t)
	var hooks, authorized atomic.Int64
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(func(sqlite.ExecQuerierContext, string) error { hooks.Add(1); return nil })
	drv.RegisterConnectionHook(authorizerHook(&authorized))
	b := For(drv)
	if !b.Hooked() {
		t.Error("Hooked: false with two connection hooks")
	}
	for _, tc := range []struct {
		dsn          string
		probe, wantR bool
	}{
		{fileURI(p, "mode=ro"), true, true},
		{fileURI(p, "immutable=1"), true, true},
		{fileURI(p, ""), true, false},
		{p, true, false},
		{fileURI(p, "mode=ro"), false, false}, // not asked
	} {
		before := hooks.Load()
		authorized.Store(0)
		c, ro, err := b.Open(tc.dsn, tc.probe)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.dsn, err)
		}
		if ro != tc.wantR {
			t.Errorf("Open(%q, %v): readOnly %v, want %v", tc.dsn, tc.probe, ro, tc.wantR)
		}
		if hooks.Load() != before+1 {
			t.Errorf("Open(%q): the driver's hook ran %d times", tc.dsn, hooks.Load()-before)
		}
		if n := authorized.Load(); n != 0 {
			t.Errorf("Open(%q, %v): the hook's authorizer saw %d calls from the probe", tc.dsn, tc.probe, n)
		}
		// The authorizer is installed: a statement, and sqlbase's SQL probe
		// (the fallback for a connection without IsReadOnly), are seen.
		queryValue(t, c, "SELECT count(*) FROM t")
		if authorized.Load() == 0 {
			t.Errorf("Open(%q): the hook's authorizer is not installed", tc.dsn)
		}
		authorized.Store(0)
		if got := sqlbase.OpenedReadOnly(c); got != (tc.wantR || !tc.probe && strings.Contains(tc.dsn, "mode=ro")) {
			t.Errorf("sqlbase.OpenedReadOnly on %q: %v", tc.dsn, got)
		}
		if authorized.Load() == 0 {
			t.Error("the authorizer does not see an EXPLAIN: this test cannot tell a SQL probe")
		}
		c.Close()
	}
}

// Open uses the configured driver: its functions are defined, a hook's
// error fails the open with modernc's wrapping, and its errors are
// modernc's own.
func TestOpenUsesConfiguredDriver(t *testing.T) {
	drv := &sqlite.Driver{}
	if err := drv.RegisterScalarFunction("seven", 0, func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		return int64(7), nil
	}); err != nil {
		t.Fatal(err)
	}
	b := For(drv)
	if b.Hooked() {
		t.Error("Hooked: true without connection hooks")
	}
	c := openConn(t, b, ":memory:")
	if v := queryValue(t, c, "SELECT seven()"); v != int64(7) {
		t.Errorf("seven() = %v", v)
	}

	refused := errors.New("refused")
	drv2 := &sqlite.Driver{}
	drv2.RegisterConnectionHook(func(sqlite.ExecQuerierContext, string) error { return refused })
	if _, _, err := For(drv2).Open(":memory:", true); !errors.Is(err, refused) || !strings.Contains(err.Error(), "connection hook") {
		t.Errorf("Open with a failing hook: %v", err)
	}

	missing := filepath.Join(testdir.New(t), "missing.db")
	_, _, err := b.Open(fileURI(missing, "mode=ro"), true)
	if code, ok := sqlbase.Code(err); !ok || code.Code != 14 { // SQLITE_CANTOPEN
		t.Errorf("Open of a missing mode=ro file: %v (%+v)", err, code)
	}
}

// The error reader registered by the package: modernc's extended code
// and its primary code.
func TestErrorReader(t *testing.T) {
	c := openConn(t, For(&sqlite.Driver{}), fileURI(newFile(t), "mode=ro"))
	_, err := c.ExecContext(context.Background(), "INSERT INTO t VALUES(1)", nil)
	code, ok := sqlbase.Code(err)
	if !ok || code.Code != sqlbase.ReadOnly || code.Extended&0xff != sqlbase.ReadOnly || code.Err != err || code.Message != err.Error() {
		t.Fatalf("Code(%v) = %+v, %v", err, code, ok)
	}
	if !sqlbase.WriteRefused(err) {
		t.Error("WriteRefused: false for SQLITE_READONLY")
	}
	if _, ok := sqlbase.Code(io.EOF); ok {
		t.Error("Code(io.EOF): ok")
	}
}
