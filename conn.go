package cleolease

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/lease"
)

// Conn is implemented by the value sql.Conn.Raw passes to its callback:
//
//	err := conn.Raw(func(dc any) error {
//		sc := dc.(cleolease.Conn).SQLiteConn()
//		return sc.RegisterFunc("twice", func(x int) int { return 2 * x }, true)
//	})
//
// Statements run directly on the *sqlite3.SQLiteConn bypass the writer
// lease and the fencing check.
type Conn interface {
	driver.Conn
	SQLiteConn() *sqlite3.SQLiteConn
}

// outerConn is what database/sql holds: sqlmw's connection (which routes
// every call to leaseConn through the interceptor) plus Raw access. It
// forwards every optional interface sqlmw's connection implements.
type outerConn struct {
	mw            driver.Conn
	inner         *leaseConn
	ownsConnector bool
}

var (
	_ Conn                          = (*outerConn)(nil)
	_ driver.ConnBeginTx            = (*outerConn)(nil)
	_ driver.ConnPrepareContext     = (*outerConn)(nil)
	_ driver.ExecerContext          = (*outerConn)(nil)
	_ driver.QueryerContext         = (*outerConn)(nil)
	_ driver.Pinger                 = (*outerConn)(nil)
	_ driver.SessionResetter        = (*outerConn)(nil)
	_ driver.Validator              = (*outerConn)(nil)
	_ driver.NamedValueChecker      = (*outerConn)(nil)
	_ driver.Execer                 = (*outerConn)(nil) //nolint:staticcheck // forwarded for old callers
	_ driver.Queryer                = (*outerConn)(nil) //nolint:staticcheck
	_ driver.ConnBeginTx            = (*leaseConn)(nil)
	_ driver.ExecerContext          = (*leaseConn)(nil)
	_ driver.QueryerContext         = (*leaseConn)(nil)
	_ driver.ConnPrepareContext     = (*leaseConn)(nil)
	_ driver.SessionResetter        = (*leaseConn)(nil)
	_ driver.Validator              = (*leaseConn)(nil)
	_ driver.StmtExecContext        = (*leaseStmt)(nil)
	_ driver.StmtQueryContext       = (*leaseStmt)(nil)
	_ driver.RowsColumnTypeScanType = (*leaseRows)(nil)
)

// SQLiteConn returns the native go-sqlite3 connection.
func (c *outerConn) SQLiteConn() *sqlite3.SQLiteConn { return c.inner.SQLiteConn }

func (c *outerConn) Prepare(query string) (driver.Stmt, error) { return c.mw.Prepare(query) }
func (c *outerConn) Begin() (driver.Tx, error)                 { return c.mw.Begin() } //nolint:staticcheck

func (c *outerConn) Close() error {
	err := c.mw.Close()
	if c.ownsConnector {
		c.inner.c.Close()
	}
	return err
}

func (c *outerConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.mw.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *outerConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.mw.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *outerConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.mw.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *outerConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.mw.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *outerConn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return c.mw.(driver.Execer).Exec(query, args) //nolint:staticcheck
}

func (c *outerConn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return c.mw.(driver.Queryer).Query(query, args) //nolint:staticcheck
}

func (c *outerConn) Ping(ctx context.Context) error { return c.mw.(driver.Pinger).Ping(ctx) }

func (c *outerConn) ResetSession(ctx context.Context) error {
	return c.mw.(driver.SessionResetter).ResetSession(ctx)
}

func (c *outerConn) IsValid() bool { return c.mw.(driver.Validator).IsValid() }

func (c *outerConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.mw.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// leaseConn is the connection under sqlmw. It embeds the concrete
// *sqlite3.SQLiteConn (so every optional interface go-sqlite3 implements
// stays visible: sqlmw type-asserts them) and overrides each path that can
// write, so that the lease is taken whichever way a statement arrives.
type leaseConn struct {
	*sqlite3.SQLiteConn
	c  *Connector
	tx *leaseTx // the transaction this driver began, nil when none

	classes map[string]class // per-connection cache of classify results
	fence   *sqlite3.SQLiteStmt
	closed  bool
	engine  *lease.Engine // the connector's, cached at first use
}

// QueryContext serves Hold.Fence from a statement prepared once per
// connection (lease.FenceSQL); any other query is prepared as usual.
func (f fenceQuerier) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	lc := f.lc
	if query != lease.FenceSQL {
		return lc.SQLiteConn.QueryContext(ctx, query, args)
	}
	if lc.fence == nil {
		st, err := lc.SQLiteConn.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		lc.fence = st.(*sqlite3.SQLiteStmt)
	}
	return lc.fence.QueryContext(ctx, args)
}

type fenceQuerier struct{ lc *leaseConn }

// class is what SQLite says of a statement string.
type class struct {
	write     bool // may write: !sqlite3_stmt_readonly, or several statements
	fenceable bool // may run inside the driver's BEGIN IMMEDIATE … COMMIT
}

// unfenced are statements that cannot run inside a transaction or manage
// their own: they are leased but not fenced (README "What is fenced").
var unfenced = map[string]bool{
	"BEGIN": true, "COMMIT": true, "END": true, "ROLLBACK": true, "SAVEPOINT": true, "RELEASE": true,
	"VACUUM": true, "PRAGMA": true, "ATTACH": true, "DETACH": true,
}

// classify prepares query to let SQLite judge it. go-sqlite3's
// Readonly() judges the first statement only, so a string holding more
// than one statement counts as a write, and is not fenced (its later
// statements may manage their own transaction). Results are cached per
// connection by query text. On a cache miss for a single statement, the
// prepared statement is returned too, so the caller runs it instead of
// preparing the same text again (it must Close it); otherwise st is nil.
func (lc *leaseConn) classify(query string) (k class, st *sqlite3.SQLiteStmt, err error) {
	if k, ok := lc.classes[query]; ok {
		return k, nil, nil
	}
	ds, err := lc.SQLiteConn.Prepare(query)
	if err != nil {
		return class{}, nil, err
	}
	s := ds.(*sqlite3.SQLiteStmt)
	k = class{write: !s.Readonly(), fenceable: !unfenced[firstKeyword(query)]}
	if stmtTail(s) != "" {
		k = class{write: true, fenceable: false}
		s.Close()
		s = nil
	}
	if lc.classes == nil || len(lc.classes) > 512 {
		lc.classes = map[string]class{}
	}
	lc.classes[query] = k
	return k, s, nil
}

// stmtTail returns the unparsed remainder of a prepared string. go-sqlite3
// keeps it in an unexported field; reading a string field through reflect
// is allowed and changes nothing.
func stmtTail(s *sqlite3.SQLiteStmt) string {
	return reflect.ValueOf(s).Elem().FieldByName("t").String()
}

// firstKeyword returns the first word of query, upper-cased, skipping
// white space and SQL comments.
func firstKeyword(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n\f;(")
		switch {
		case strings.HasPrefix(q, "--"):
			if i := strings.IndexByte(q, '\n'); i >= 0 {
				q = q[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(q, "/*"):
			if i := strings.Index(q, "*/"); i >= 0 {
				q = q[i+2:]
				continue
			}
			return ""
		}
		break
	}
	end := strings.IndexFunc(q, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if end < 0 {
		end = len(q)
	}
	return strings.ToUpper(q[:end])
}

// needsLease decides whether a statement of class k, issued outside the
// driver's own transaction, must take the lease. A write inside a
// transaction the driver did not begin is refused (ErrForeignTransaction).
func (lc *leaseConn) needsLease(k class) (bool, error) {
	if !k.write || lc.tx != nil || !lc.c.leased() {
		return false, nil
	}
	if !lc.SQLiteConn.AutoCommit() {
		return false, ErrForeignTransaction
	}
	return true, nil
}

// ExecContext runs query, taking the lease first when SQLite says it may
// write. An autocommit write runs inside the driver's own BEGIN IMMEDIATE,
// fenced just before COMMIT, unless it cannot run in a transaction.
func (lc *leaseConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := lc.fileCheck(); err != nil {
		return nil, err
	}
	if lc.tx != nil || !lc.c.leased() {
		return lc.SQLiteConn.ExecContext(ctx, query, args)
	}
	k, st, err := lc.classify(query)
	if err != nil {
		return nil, err
	}
	run := func() (driver.Result, error) { return lc.SQLiteConn.ExecContext(ctx, query, args) }
	if st != nil {
		defer st.Close()
		run = func() (driver.Result, error) { return st.ExecContext(ctx, args) }
	}
	need, err := lc.needsLease(k)
	if err != nil {
		return nil, err
	}
	if !need {
		return run()
	}
	return lc.leasedExec(ctx, k, run)
}

func (lc *leaseConn) leasedExec(ctx context.Context, k class, run func() (driver.Result, error)) (driver.Result, error) {
	h, err := lc.c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer releaseHold(h)
	if !k.fenceable || h == nil {
		return run()
	}
	if err := lc.beginImmediate(ctx, h); err != nil {
		return nil, err
	}
	res, err := run()
	if err != nil {
		lc.rollback()
		return nil, err
	}
	if err := lc.commitFenced(h); err != nil {
		return nil, err
	}
	return res, nil
}

// QueryContext runs query; a query that may write (INSERT … RETURNING)
// takes the lease, which is held until the rows are closed.
func (lc *leaseConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := lc.fileCheck(); err != nil {
		return nil, err
	}
	if lc.tx != nil || !lc.c.leased() {
		return lc.SQLiteConn.QueryContext(ctx, query, args)
	}
	k, st, err := lc.classify(query)
	if err != nil {
		return nil, err
	}
	run := func() (driver.Rows, error) { return lc.SQLiteConn.QueryContext(ctx, query, args) }
	if st != nil {
		// The statement is closed with its rows, or here if it never ran
		// (a refused foreign transaction, a lease or BEGIN that failed).
		ran := false
		defer func() {
			if !ran {
				st.Close()
			}
		}()
		run = func() (driver.Rows, error) {
			ran = true
			rows, err := st.QueryContext(ctx, args)
			if err != nil {
				st.Close()
				return nil, err
			}
			return &stmtRows{Rows: rows, st: st}, nil
		}
	}
	need, err := lc.needsLease(k)
	if err != nil {
		return nil, err
	}
	if !need {
		return run()
	}
	return lc.leasedQuery(ctx, k, run)
}

// stmtRows closes the statement classify prepared when its rows close.
type stmtRows struct {
	driver.Rows
	st *sqlite3.SQLiteStmt
}

func (r *stmtRows) Close() error {
	err := r.Rows.Close()
	r.st.Close()
	return err
}

func (r *stmtRows) ColumnTypeScanType(i int) reflect.Type {
	return r.Rows.(driver.RowsColumnTypeScanType).ColumnTypeScanType(i)
}

func (r *stmtRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.Rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(i)
}

func (r *stmtRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	return r.Rows.(driver.RowsColumnTypeNullable).ColumnTypeNullable(i)
}

func (lc *leaseConn) leasedQuery(ctx context.Context, k class, run func() (driver.Rows, error)) (driver.Rows, error) {
	h, err := lc.c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	fenced := k.fenceable && h != nil
	if fenced {
		if err := lc.beginImmediate(ctx, h); err != nil {
			releaseHold(h)
			return nil, err
		}
	}
	rows, err := run()
	if err != nil {
		if fenced {
			lc.rollback()
		}
		releaseHold(h)
		return nil, err
	}
	return &leaseRows{Rows: rows, lc: lc, h: h, fenced: fenced}, nil
}

// leaseRows holds the lease of a write that returns rows until Close,
// which then commits (fenced) and releases it.
type leaseRows struct {
	driver.Rows
	lc     *leaseConn
	h      *lease.Hold
	fenced bool
	once   sync.Once
}

func (r *leaseRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(func() {
		defer releaseHold(r.h)
		if !r.fenced {
			return
		}
		if err != nil {
			r.lc.rollback()
			return
		}
		err = r.lc.commitFenced(r.h)
	})
	return err
}

func (r *leaseRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *leaseRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *leaseRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

// begin starts the driver's own transaction on this connection.
func (lc *leaseConn) begin(ctx context.Context, stmt string) error {
	_, err := lc.SQLiteConn.ExecContext(context.WithoutCancel(ctx), stmt, nil)
	return err
}

// beginImmediate starts the driver's write transaction once the lease is
// held. The only competitors for SQLite's write lock are then other lanes
// and short lease bookkeeping, so instead of SQLite's busy handler (which
// sleeps at least 1 ms per retry) it retries in Go with a back-off from
// 10µs to 500µs, for as long as the connection's busy_timeout allows,
// honouring ctx. SQLite's SQLITE_BUSY comes back unchanged at the end.
func (lc *leaseConn) beginImmediate(ctx context.Context, h *lease.Hold) error {
	bg := context.WithoutCancel(ctx)
	if h == nil || !h.Claimed() {
		// This process kept the lane: nobody else is expected to want
		// the write lock, and SQLite's busy handler is the cheaper path.
		_, err := lc.SQLiteConn.ExecContext(bg, "BEGIN IMMEDIATE", nil)
		return err
	}
	// The user's busy_timeout (read each time: a PRAGMA through any path,
	// Raw included, may have changed it) bounds the retries and is restored.
	busyMS := 0
	if rows, err := lc.SQLiteConn.QueryContext(bg, "PRAGMA busy_timeout", nil); err == nil {
		v := make([]driver.Value, 1)
		if rows.Next(v) == nil {
			n, _ := v[0].(int64)
			busyMS = int(n)
		}
		rows.Close()
	}
	if _, err := lc.SQLiteConn.ExecContext(bg, "PRAGMA busy_timeout = 0", nil); err != nil {
		return err
	}
	defer lc.SQLiteConn.ExecContext(bg, "PRAGMA busy_timeout = "+strconv.Itoa(busyMS), nil)
	deadline := time.Now().Add(time.Duration(busyMS) * time.Millisecond)
	wait := 10 * time.Microsecond
	for {
		_, err := lc.SQLiteConn.ExecContext(bg, "BEGIN IMMEDIATE", nil)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait *= 2; wait > 500*time.Microsecond {
			wait = 500 * time.Microsecond
		}
	}
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

func (lc *leaseConn) rollback() {
	if !lc.SQLiteConn.AutoCommit() {
		lc.SQLiteConn.ExecContext(context.Background(), "ROLLBACK", nil)
	}
}

// commitFenced checks the lease inside the transaction, then commits; a
// lost lease rolls back and returns the typed error. SQLite's own errors
// come back unchanged.
func (lc *leaseConn) commitFenced(h *lease.Hold) error {
	ctx := context.Background()
	if h != nil {
		if err := h.Fence(ctx, fenceQuerier{lc}); err != nil {
			lc.rollback()
			return err
		}
	}
	if _, err := lc.SQLiteConn.ExecContext(ctx, "COMMIT", nil); err != nil {
		lc.rollback()
		return err
	}
	return nil
}

// Exec and Query are the pre-context entry points (sqlmw calls them
// directly, bypassing its interceptor); they take the same paths.
func (lc *leaseConn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return lc.ExecContext(context.Background(), query, named(args))
}

func (lc *leaseConn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return lc.QueryContext(context.Background(), query, named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// Prepare and PrepareContext return statements whose Exec and Query take
// the lease like the connection's.
func (lc *leaseConn) Prepare(query string) (driver.Stmt, error) {
	return lc.PrepareContext(context.Background(), query)
}

func (lc *leaseConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := lc.fileCheck(); err != nil {
		return nil, err
	}
	st, err := lc.SQLiteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s := st.(*sqlite3.SQLiteStmt)
	// go-sqlite3 runs only the first statement of a prepared string.
	k := class{write: !s.Readonly(), fenceable: !unfenced[firstKeyword(query)]}
	return &leaseStmt{SQLiteStmt: s, lc: lc, k: k}, nil
}

// leaseStmt is a prepared statement under the lease rules.
type leaseStmt struct {
	*sqlite3.SQLiteStmt
	lc *leaseConn
	k  class
}

func (s *leaseStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.lc.fileCheck(); err != nil {
		return nil, err
	}
	need, err := s.lc.needsLease(s.k)
	if err != nil {
		return nil, err
	}
	if !need {
		return s.SQLiteStmt.ExecContext(ctx, args)
	}
	return s.lc.leasedExec(ctx, s.k, func() (driver.Result, error) { return s.SQLiteStmt.ExecContext(ctx, args) })
}

func (s *leaseStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.lc.fileCheck(); err != nil {
		return nil, err
	}
	need, err := s.lc.needsLease(s.k)
	if err != nil {
		return nil, err
	}
	if !need {
		return s.SQLiteStmt.QueryContext(ctx, args)
	}
	return s.lc.leasedQuery(ctx, s.k, func() (driver.Rows, error) { return s.SQLiteStmt.QueryContext(ctx, args) })
}

func (s *leaseStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *leaseStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// ResetSession refuses to hand out again a connection left inside a
// transaction (a hand-written BEGIN never committed): database/sql then
// discards it, which rolls that transaction back.
func (lc *leaseConn) ResetSession(ctx context.Context) error {
	if lc.tx != nil || !lc.SQLiteConn.AutoCommit() {
		return driver.ErrBadConn
	}
	return nil
}

// fileCheck refuses every statement on a connection whose database path
// was renamed over or deleted (ErrFileChanged): with a rollback journal,
// even a read of the old file could play the new file's journal into it.
// An atomic load while inotify reports nothing about the file.
func (lc *leaseConn) fileCheck() error {
	if lc.engine == nil {
		lc.engine = lc.c.Engine()
		if lc.engine == nil {
			return nil
		}
	}
	return lc.engine.FileChanged()
}

// IsValid reports whether the connection can be reused: not closed.
func (lc *leaseConn) IsValid() bool { return !lc.closed }

// Close ends the driver's transaction, if one is open (SQLite rolls it
// back), releasing its lease, and closes the connection.
func (lc *leaseConn) Close() error {
	if lc.tx != nil {
		lc.tx.end()
	}
	if lc.fence != nil {
		lc.fence.Close()
	}
	lc.closed = true
	return lc.SQLiteConn.Close()
}

func releaseHold(h *lease.Hold) {
	if h != nil {
		h.Release()
	}
}
