package base

// The application's connections over modernc.org/sqlite v1.62.0: Base as
// a sqlbase.Driver. modernc exports no sqlite3* handle, no
// sqlite3_stmt_readonly, no statement tail and no sqlite3_get_autocommit
// (its statements' NumInput is always -1: stmt.go), so Describe and
// AutoCommit call SQLite (modernc.org/sqlite/lib) on the connection's own
// handle and libc thread state, read from the unexported fields db and tls
// of modernc's connection type (conn.go). handles checks the type and both
// fields and fails closed; TestHandlesOfModerncConn notices a layout
// change.

import (
	"database/sql/driver"
	"fmt"
	"reflect"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

var _ sqlbase.Driver = (*Base)(nil)

// Open opens dsn with the base's driver, the *sqlite.Driver the
// application configured: everything registered on it (functions,
// collations, connection hooks, virtual table modules) applies, as on the
// connections it opens itself. With probe, readOnly is
// sqlite3_db_readonly(db, "main"), through the connection's public
// IsReadOnly.
//
// The question is asked after modernc's Open returns, so after the
// application's connection hooks, not before them as the go-sqlite3 base
// does: modernc's (*Driver).Open (driver.go) runs newConn
// (sqlite3_open_v2 and the DSN's parameters), then the driver's
// functions and collations, then its connection hooks in the order they
// were registered, then its modules, and nothing exported runs code of
// cleolease's between the DSN's parameters and the first hook (a hook
// registered by cleolease would run after the application's, and a private
// copy of the driver would mean copying Driver's unexported fields). That
// is equivalent here: sqlite3_db_readonly is a C call, not a statement, so
// no authorizer, trace, progress handler or other callback a hook
// installed sees it, and what it reads (the read-only flag of the main
// database's b-tree, set when SQLite opens the file) is nothing a hook
// sets. Only a connection without IsReadOnly (not modernc v1.62.0's) is
// asked through sqlbase.OpenedReadOnly, an EXPLAIN that an authorizer of
// the application's would see.
//
// Errors are modernc's own: an open or DSN parameter error, or a hook's
// error wrapped as "connection hook: %w".
func (b *Base) Open(dsn string, probe bool) (sqlbase.Conn, bool, error) {
	dc, err := b.drv.Open(dsn)
	if err != nil {
		return nil, false, err
	}
	conn, ok := dc.(sqlbase.Conn)
	if !ok {
		dc.Close()
		return nil, false, fmt.Errorf("cleolease: modernc.org/sqlite's connection %T lacks the context methods cleolease needs", dc)
	}
	return conn, probe && openedReadOnly(conn), nil
}

// readOnlyAsker is modernc's connection's sqlite3_db_readonly (conn.go).
type readOnlyAsker interface {
	IsReadOnly(schema string) (bool, error)
}

// openedReadOnly reports whether SQLite opened conn's main database
// read-only.
func openedReadOnly(conn sqlbase.Conn) bool {
	if r, ok := conn.(readOnlyAsker); ok {
		ro, err := r.IsReadOnly("main")
		return err == nil && ro
	}
	return sqlbase.OpenedReadOnly(conn)
}

// Describe prepares the first statement of query with
// sqlite3_prepare_v2 on conn's own handle, reads sqlite3_stmt_readonly,
// sqlite3_bind_parameter_count and the tail, and finalizes it: nothing
// runs. When SQLite cannot prepare it, the error is modernc's own
// (*sqlite.Error, the value its Exec would return), got by asking conn's
// Prepare, which prepares the first statement at once and runs nothing
// (stmt.go, newStmt).
//
// On a connection whose handle cannot be read (not modernc's connection
// type, or a modernc whose layout differs from v1.62.0's) the answer fails
// closed: a statement that may write, with no parameters and no tail (the
// whole string as one statement), after conn's Prepare found no error. A
// closed connection is driver.ErrBadConn.
func (b *Base) Describe(conn sqlbase.Conn, query string) (sqlbase.StmtInfo, error) {
	tls, db, known := handles(conn)
	switch {
	case !known:
		return describeBlind(conn, query)
	case db == 0 || tls == nil:
		return sqlbase.StmtInfo{}, driver.ErrBadConn // closed
	}
	info, rc, err := prepareFirst(tls, db, query)
	if err != nil {
		return describeBlind(conn, query)
	}
	if rc == sqlite3.SQLITE_OK {
		return info, nil
	}
	st, err := conn.Prepare(query)
	if err != nil {
		return sqlbase.StmtInfo{}, err
	}
	st.Close()
	// modernc prepared it after all (its prepare retries a shared-cache
	// lock; the schema may have changed in between): ask again, once.
	if info, rc, err = prepareFirst(tls, db, query); err == nil && rc == sqlite3.SQLITE_OK {
		return info, nil
	}
	return sqlbase.StmtInfo{}, nil
}

// describeBlind is Describe without the handle: the driver's own error for
// a statement SQLite cannot prepare, and otherwise a possible write.
func describeBlind(conn sqlbase.Conn, query string) (sqlbase.StmtInfo, error) {
	st, err := conn.Prepare(query)
	if err != nil {
		return sqlbase.StmtInfo{}, err
	}
	st.Close()
	return sqlbase.StmtInfo{}, nil
}

// DescribeStmt describes what st, which conn's PrepareContext prepared
// from query, runs. A modernc statement prepared from several statements
// runs all of them, each bound to the same arguments (stmt.go: newStmt
// keeps a script's text and exec and query walk it), unlike go-sqlite3's,
// which runs the first. So Empty and ReadOnly cover every statement of
// query: it is Empty when none is a statement, ReadOnly when each is, and
// Inputs is the largest parameter count of them. Tail is what follows the
// first statement that is not empty (the text before it is that
// statement). A later statement SQLite cannot prepare yet (it depends on
// an earlier one: CREATE TABLE then INSERT), or one starting with PRAGMA
// or EXPLAIN, whose preparation can change the connection's settings, is
// not prepared and counts as a write.
func (b *Base) DescribeStmt(conn sqlbase.Conn, _ driver.Stmt, query string) sqlbase.StmtInfo {
	info, err := b.Describe(conn, query)
	if err != nil {
		return sqlbase.StmtInfo{Runs: 2} // a possible write, never fenced alone
	}
	runs := 0
	if !info.Empty {
		runs = 1
	}
	rest, tail := info.Tail, info.Tail
	for rest != "" {
		if prepareApplies(rest) {
			return sqlbase.StmtInfo{Inputs: info.Inputs, Tail: tail, Runs: runs + 1}
		}
		next, err := b.Describe(conn, rest)
		if err != nil {
			return sqlbase.StmtInfo{Inputs: info.Inputs, Tail: tail, Runs: runs + 1}
		}
		switch {
		case next.Empty:
		case info.Empty:
			info, tail, runs = next, next.Tail, 1
		default:
			info.ReadOnly = info.ReadOnly && next.ReadOnly
			info.Inputs = max(info.Inputs, next.Inputs)
			runs++
		}
		if len(next.Tail) >= len(rest) {
			break // defensive: SQLite always consumes input
		}
		rest = next.Tail
	}
	info.Tail = tail
	info.Runs = runs
	return info
}

// prepareApplies reports a statement text whose first word is PRAGMA or
// EXPLAIN: SQLite applies many PRAGMAs while preparing them (EXPLAIN
// PRAGMA too).
func prepareApplies(text string) bool {
	w := sqlbase.FirstWord(text)
	return w == "PRAGMA" || w == "EXPLAIN"
}

// AutoCommit is sqlite3_get_autocommit on conn's handle. A connection
// whose handle cannot be read reports false (inside a transaction): the
// driver then refuses its writes rather than running one outside the lease.
func (b *Base) AutoCommit(conn sqlbase.Conn) bool {
	tls, db, known := handles(conn)
	return known && db != 0 && tls != nil && sqlite3.Xsqlite3_get_autocommit(tls, db) != 0
}

// Hooked reports whether the base's driver has connection hooks
// (RegisterConnectionHook on it, or the package-level one when it is the
// driver modernc registers as "sqlite"): the number of them is the length
// of Driver's unexported connectionHooks (driver.go), read through
// reflection. When that field is not there (a modernc whose layout
// differs), Hooked reports true, the answer that keeps the lease's rows
// off the application's connections.
func (b *Base) Hooked() bool {
	f := reflect.ValueOf(b.drv).Elem().FieldByName("connectionHooks")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem() != hookFnType {
		return true
	}
	return f.Len() > 0
}

var (
	hookFnType  = reflect.TypeFor[sqlite.ConnectionHookFn]()
	tlsType     = reflect.TypeFor[*libc.TLS]()
	uintptrType = reflect.TypeFor[uintptr]()
)

// handles returns the libc thread state and the sqlite3* handle of conn, a
// connection modernc.org/sqlite opened: the fields tls (*libc.TLS) and db
// (uintptr) of its unexported type conn (conn.go). known is false when conn
// is not that type or the fields are not there with those types; a closed
// connection is known, with a nil tls and a zero db. The TLS is the
// connection's own: a connection is used by one goroutine at a time, and
// modernc's context watcher, which may run beside it, uses a TLS of its
// own.
func handles(conn any) (tls *libc.TLS, db uintptr, known bool) {
	v := reflect.ValueOf(conn)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, 0, false
	}
	e := v.Elem()
	if t := e.Type(); t.PkgPath() != "modernc.org/sqlite" || t.Name() != "conn" || t.Kind() != reflect.Struct {
		return nil, 0, false
	}
	fdb, ftls := e.FieldByName("db"), e.FieldByName("tls")
	if !fdb.IsValid() || !ftls.IsValid() || fdb.Type() != uintptrType || ftls.Type() != tlsType {
		return nil, 0, false
	}
	db = uintptr(fdb.Uint())
	return (*libc.TLS)(ftls.UnsafePointer()), db, true
}

const ptrSize = int(unsafe.Sizeof(uintptr(0)))

// prepareFirst prepares the first statement of query on db and describes
// it (rc SQLITE_OK), or returns SQLite's result code; err reports a failed
// allocation.
func prepareFirst(tls *libc.TLS, db uintptr, query string) (info sqlbase.StmtInfo, rc int32, err error) {
	z, err := libc.CString(query)
	if err != nil {
		return info, 0, err
	}
	defer libc.Xfree(tls, z)
	pp := tls.Alloc(2 * ptrSize) // sqlite3_stmt **ppStmt, const char **pzTail
	defer tls.Free(2 * ptrSize)
	ppStmt, ppTail := pp, pp+uintptr(ptrSize)
	*(*uintptr)(cmem(ppStmt)) = 0
	if rc = sqlite3.Xsqlite3_prepare_v2(tls, db, z, -1, ppStmt, ppTail); rc != sqlite3.SQLITE_OK {
		return info, rc, nil
	}
	stmt, tail := *(*uintptr)(cmem(ppStmt)), *(*uintptr)(cmem(ppTail))
	if off := int(tail - z); off >= 0 && off <= len(query) {
		info.Tail = query[off:]
	}
	if stmt == 0 {
		info.Empty, info.ReadOnly = true, true
		return info, rc, nil
	}
	info.ReadOnly = sqlite3.Xsqlite3_stmt_readonly(tls, stmt) != 0
	info.Inputs = int(sqlite3.Xsqlite3_bind_parameter_count(tls, stmt))
	sqlite3.Xsqlite3_finalize(tls, stmt)
	return info, rc, nil
}

// cmem turns an address in modernc's C heap (libc's allocator or a TLS
// stack, not Go memory) into an unsafe.Pointer without the uintptr to
// Pointer conversion go vet reports.
func cmem(p uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), p) }
