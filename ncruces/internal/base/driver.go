package base

// The application's connections over ncruces: Base as a sqlbase.Driver.

import (
	"context"
	"database/sql/driver"
	"reflect"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

var _ sqlbase.Driver = (*Base)(nil)

// Open opens dsn with ncruces's driver, then runs the application's
// Callbacks on it: Init (its error, as it returned it, fails the open and
// closes the connection), and Term registered to run when the connection
// closes, as ncruces's driver.Open does. With probe, readOnly is
// sqlite3_db_readonly(db, "main"), asked before Init runs: a C call, not a
// statement, so no callback of the application's sees it.
//
// One order differs from ncruces's own connector, which runs Init before
// it reads PRAGMA query_only to pick its default transaction lock: here
// the DSN alone decides it (an Init that sets query_only leaves BEGIN
// IMMEDIATE the default, and the connection refuses the write).
// Errors are ncruces's own (*sqlite3.Error, or its error for a bad
// _txlock or a DSN url.Parse refuses).
func (b *Base) Open(dsn string, probe bool) (sqlbase.Conn, bool, error) {
	c, err := connect(context.Background(), dsn)
	if err != nil {
		return nil, false, err
	}
	raw := c.Raw()
	readOnly := false
	if probe {
		readOnly, _ = raw.ReadOnly("main")
	}
	if cb := b.cb; cb != nil {
		if cb.Init != nil {
			if err := cb.Init(raw); err != nil {
				c.Close()
				return nil, false, err
			}
		}
		if cb.Term != nil {
			if err := raw.Trace(sqlite3.TRACE_CLOSE, func(sqlite3.TraceEvent, any, any) error { return cb.Term(raw) }); err != nil {
				c.Close()
				return nil, false, err
			}
		}
	}
	return c, readOnly, nil
}

// rawConn is a connection that gives ncruces's handle (Conn, and ncruces's
// own driver connection).
type rawConn interface{ Raw() *sqlite3.Conn }

// Describe prepares the first statement of query on conn's handle and
// describes it (sqlite3_stmt_readonly, sqlite3_bind_parameter_count, the
// tail), running nothing. When SQLite cannot prepare it, the error is
// ncruces's own, the one its PrepareContext returns for query.
func (b *Base) Describe(conn sqlbase.Conn, query string) (sqlbase.StmtInfo, error) {
	rc, ok := conn.(rawConn)
	if !ok {
		st, err := conn.Prepare(query)
		if err != nil {
			return sqlbase.StmtInfo{}, err
		}
		st.Close()
		return sqlbase.StmtInfo{}, nil // a possible write
	}
	s, tail, err := rc.Raw().Prepare(query)
	if err != nil {
		return sqlbase.StmtInfo{}, err
	}
	if s == nil {
		return sqlbase.StmtInfo{Empty: true, ReadOnly: true, Tail: tail}, nil
	}
	defer s.Close()
	return sqlbase.StmtInfo{ReadOnly: s.ReadOnly(), Inputs: s.BindCount(), Tail: tail}, nil
}

// DescribeStmt describes st, which ncruces's PrepareContext prepared from
// query: one statement (ncruces refuses a string with a second one), read
// from its own handle, the embedded *sqlite3.Stmt of ncruces's statement
// type (nil when query held no statement). A statement of another shape
// is described by preparing query again.
func (b *Base) DescribeStmt(conn sqlbase.Conn, st driver.Stmt, query string) sqlbase.StmtInfo {
	if s, ok := stmtOf(st); ok {
		if s == nil {
			return sqlbase.StmtInfo{Empty: true, ReadOnly: true, Runs: 1}
		}
		return sqlbase.StmtInfo{ReadOnly: s.ReadOnly(), Inputs: s.BindCount(), Runs: 1}
	}
	info, err := b.Describe(conn, query)
	if err != nil {
		return sqlbase.StmtInfo{Runs: 2} // a possible write, never fenced alone
	}
	info.Runs = 1
	return info
}

// stmtOf returns the *sqlite3.Stmt embedded in st, a statement of
// ncruces's driver (its field Stmt); ok is false for any other shape.
func stmtOf(st driver.Stmt) (s *sqlite3.Stmt, ok bool) {
	if w, isOurs := st.(*Stmt); isOurs {
		st = w.Stmt
	}
	v := reflect.ValueOf(st)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("Stmt")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*sqlite3.Stmt]() || !f.CanInterface() {
		return nil, false
	}
	return f.Interface().(*sqlite3.Stmt), true
}

// AutoCommit is sqlite3_get_autocommit on conn's handle. A connection
// without one reports false (inside a transaction): the driver then
// refuses its writes rather than running one outside the lease.
func (b *Base) AutoCommit(conn sqlbase.Conn) bool {
	rc, ok := conn.(rawConn)
	return ok && rc.Raw().GetAutocommit()
}

// Hooked reports whether the application's connections run an Init
// callback, which may install callbacks (an update hook, an authorizer,
// a trace) that must never see the lease rows.
func (b *Base) Hooked() bool { return b.cb != nil && b.cb.Init != nil }
