package cleolease

// Read-only opens. go-sqlite3 opens every file with SQLITE_OPEN_READWRITE,
// and SQLite falls back to opening it read-only when the OS refuses write
// access (a 0644 file owned by another user, a read-only mount). Such a
// connection reads exactly as go-sqlite3 reads, and each write fails with
// SQLite's own "attempt to write a readonly database" (SQLITE_READONLY):
// the driver neither switches it to WAL (a write) nor opens the lease
// engine (which creates its tables and sidecar files) for it.

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"slices"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/migrate"
)

// openSQLite opens one go-sqlite3 connection on dsn (the connector's DSN
// with its defaults) and reports whether SQLite opened the database
// read-only. When that open fails with SQLITE_READONLY and the DSN's
// journal mode is cleolease's default rather than the caller's, the
// default is what failed (switching a read-only rollback-journal file to
// WAL is a write): the connection is opened again on roDSN, the DSN
// without that default, and kept if SQLite opened it read-only; otherwise
// the first error is returned. A journal mode the caller asked for stays,
// and fails as it does with go-sqlite3. usedDSN is the DSN the returned
// connection was opened with.
func (c *Connector) openSQLite(dsn string) (sc *sqlite3.SQLiteConn, readOnly bool, usedDSN string, err error) {
	sc, readOnly, err = c.openProbed(dsn)
	if err == nil {
		return sc, readOnly, dsn, nil
	}
	var se sqlite3.Error
	if dsn == c.roDSN || !errors.As(err, &se) || se.Code != sqlite3.ErrReadonly {
		return nil, false, "", err
	}
	sc, readOnly, rerr := c.openProbed(c.roDSN)
	if rerr != nil {
		return nil, false, "", err
	}
	if !readOnly {
		sc.Close()
		return nil, false, "", err
	}
	return sc, true, c.roDSN, nil
}

// openProbed opens a connection with the connector's base driver and asks
// openedReadOnly first thing in go-sqlite3's ConnectHook: after go-sqlite3's
// own PRAGMAs and extensions, before the base driver's ConnectHook runs, so
// the question is answered before the caller's hook registers an
// authorizer or a trace that would see it. A DSN that is read-only itself
// (mode=ro, immutable=1, _query_only) needs no question: such connectors
// take no lease anyway.
func (c *Connector) openProbed(dsn string) (*sqlite3.SQLiteConn, bool, error) {
	readOnly := false
	d := &sqlite3.SQLiteDriver{
		Extensions: c.base.Extensions,
		ConnectHook: func(sc *sqlite3.SQLiteConn) error {
			readOnly = !c.readOnly && openedReadOnly(sc)
			if c.base.ConnectHook != nil {
				return c.base.ConnectHook(sc)
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

// openedReadOnly reports whether SQLite opened the main database of sc
// read-only: what sqlite3_db_readonly(db, "main") answers, asked of SQLite
// itself. go-sqlite3 v1.14.53 neither calls that function nor exports the
// sqlite3* handle it needs. A cgo call of our own does link on Linux (the
// symbol resolves against go-sqlite3's C objects), but it would read
// go-sqlite3's unexported handle through reflect and unsafe, make this
// package need cgo of its own, and depend on each platform's linker
// resolving a symbol another package's C code defines. SQLite answers the
// same question in SQL without writing or locking anything: it compiles
// BEGIN IMMEDIATE (sqlite3BeginTransaction) into one OP_Transaction per
// database whose p2 is 0, a read transaction, exactly when
// sqlite3BtreeIsReadonly — the function sqlite3_db_readonly returns — is
// true, and 1 otherwise; EXPLAIN returns that program without running it.
// EXPLAIN's listing is not a stable interface, so TestOpenedReadOnly pins
// both answers on the SQLite go-sqlite3 bundles (3.54.1); a listing without
// the main database's Transaction opcode (a SQLite that compiled BEGIN
// otherwise, an authorizer that denies it) answers false, the writable
// path cleolease takes for every file it can write.
func openedReadOnly(sc *sqlite3.SQLiteConn) bool {
	rows, err := sc.Query("EXPLAIN BEGIN IMMEDIATE", nil)
	if err != nil {
		return false
	}
	defer rows.Close()
	cols := rows.Columns()
	op, p1, p2 := slices.Index(cols, "opcode"), slices.Index(cols, "p1"), slices.Index(cols, "p2")
	if op < 0 || p1 < 0 || p2 < 0 {
		return false
	}
	v := make([]driver.Value, len(cols))
	for {
		if err := rows.Next(v); err != nil {
			return false // io.EOF included: no Transaction opcode for main
		}
		name, _ := v[op].(string)
		db, _ := v[p1].(int64)
		if name == "Transaction" && db == 0 {
			wr, ok := v[p2].(int64)
			return ok && wr == 0
		}
	}
}

// warnPendingReadOnly logs, once per connector, that the database a
// read-only connection opened (dsn, the DSN it was opened with) has
// migrations pending in the configured source: nothing is attempted on a
// file SQLite cannot write, and the connect succeeds. The warning names the
// file, the database's version and the source's newest version. Reading
// the versions writes nothing (migrate.Version); a failure to read them is
// logged instead. A Migrator alone says nothing about pending work and is
// simply not run.
func (c *Connector) warnPendingReadOnly(ctx context.Context, dsn string) {
	l := c.log
	if !l.Enabled(ctx, slog.LevelWarn) {
		return // silenced: nothing to read the versions for
	}
	c.mu.Lock()
	done := c.pendingChecked
	c.pendingChecked = true
	c.mu.Unlock()
	if done {
		return
	}
	url, fsys, ok, err := c.migrationSource()
	if !ok && err == nil {
		return
	}
	st := migrate.Status{}
	if err == nil {
		st, err = migrate.Version(ctx, migrate.Options{DSN: dsn, Driver: c.base, SourceURL: url, FS: fsys, Table: c.cfg.MigrationsTable})
	}
	switch {
	case err != nil:
		l.LogAttrs(ctx, slog.LevelWarn, "cleolease: read-only database: cannot tell whether migrations are pending; none are applied",
			slog.String("file", c.path), slog.String("err", err.Error()))
	case st.Pending > 0:
		l.LogAttrs(ctx, slog.LevelWarn, "cleolease: read-only database has pending migrations; none are applied",
			slog.String("file", c.path), slog.Int("database_version", st.Version), slog.Int("source_version", st.Latest), slog.Int("pending", st.Pending))
	}
}
