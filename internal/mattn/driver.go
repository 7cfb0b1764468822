package mattn

import (
	"database/sql/driver"
	"reflect"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

var _ sqlbase.Driver = (*Base)(nil)

// Open opens dsn with a driver that runs the base driver's Extensions and
// ConnectHook; with probe, it asks sqlbase.OpenedReadOnly first thing in
// go-sqlite3's ConnectHook: after go-sqlite3's own PRAGMAs and
// extensions, before the base driver's ConnectHook runs, so the question
// is answered before the caller's hook registers an authorizer or a trace
// that would see it. go-sqlite3 v1.14.53 neither calls
// sqlite3_db_readonly nor exports the sqlite3* handle it needs.
func (b *Base) Open(dsn string, probe bool) (sqlbase.Conn, bool, error) {
	readOnly := false
	d := &sqlite3.SQLiteDriver{
		Extensions: b.drv.Extensions,
		ConnectHook: func(sc *sqlite3.SQLiteConn) error {
			readOnly = probe && sqlbase.OpenedReadOnly(sc)
			if b.drv.ConnectHook != nil {
				return b.drv.ConnectHook(sc)
			}
			return nil
		},
	}
	conn, err := d.Open(dsn)
	if err != nil {
		return nil, false, err
	}
	return conn.(*sqlite3.SQLiteConn), readOnly, nil
}

// Describe prepares query's first statement with go-sqlite3 (which keeps
// the unparsed rest) and closes it.
func (b *Base) Describe(conn sqlbase.Conn, query string) (sqlbase.StmtInfo, error) {
	ds, err := conn.(*sqlite3.SQLiteConn).Prepare(query)
	if err != nil {
		return sqlbase.StmtInfo{}, err
	}
	defer ds.Close()
	s := ds.(*sqlite3.SQLiteStmt)
	return describe(s), nil
}

// DescribeStmt describes a *sqlite3.SQLiteStmt.
func (b *Base) DescribeStmt(_ sqlbase.Conn, st driver.Stmt, _ string) sqlbase.StmtInfo {
	return describe(st.(*sqlite3.SQLiteStmt))
}

func describe(s *sqlite3.SQLiteStmt) sqlbase.StmtInfo {
	if stmtEmpty(s) {
		return sqlbase.StmtInfo{Empty: true, ReadOnly: true, Tail: stmtTail(s)}
	}
	return sqlbase.StmtInfo{ReadOnly: s.Readonly(), Inputs: s.NumInput(), Tail: stmtTail(s)}
}

// AutoCommit is go-sqlite3's SQLiteConn.AutoCommit.
func (b *Base) AutoCommit(conn sqlbase.Conn) bool { return conn.(*sqlite3.SQLiteConn).AutoCommit() }

// Hooked reports a base driver with a ConnectHook.
func (b *Base) Hooked() bool { return b.drv.ConnectHook != nil }

// stmtTail returns the unparsed remainder of a prepared string. go-sqlite3
// keeps it in an unexported field; reading a string field through reflect
// is allowed and changes nothing.
func stmtTail(s *sqlite3.SQLiteStmt) string {
	return reflect.ValueOf(s).Elem().FieldByName("t").String()
}

// stmtEmpty reports a statement SQLite prepared to nothing (its handle is
// NULL: the text was empty, white space or comments). go-sqlite3 skips
// such statements; running one directly would crash.
func stmtEmpty(s *sqlite3.SQLiteStmt) bool {
	return reflect.ValueOf(s).Elem().FieldByName("s").IsNil()
}

// Empty reports whether st is a go-sqlite3 statement SQLite prepared to
// nothing, which go-sqlite3 v1.14.53 would crash running (it dereferences
// the NULL statement handle).
func Empty(st driver.Stmt) bool {
	s, ok := st.(*sqlite3.SQLiteStmt)
	return ok && stmtEmpty(s)
}
