package core

// Read-only opens. go-sqlite3 opens every file with SQLITE_OPEN_READWRITE,
// and SQLite falls back to opening it read-only when the OS refuses write
// access (a 0644 file owned by another user, a read-only mount). Such a
// connection reads exactly as go-sqlite3 reads, and each write fails with
// SQLite's own "attempt to write a readonly database" (SQLITE_READONLY):
// the driver neither switches it to WAL (a write) nor opens the lease
// engine (which creates its tables and sidecar files) for it.

import (
	"context"
	"log/slog"

	"github.com/cleocode/cleolease/internal/sqlbase"

	"github.com/cleocode/cleolease/migrate"
)

// openSQLite opens one connection of the base on dsn (the connector's DSN
// with its defaults) and reports whether SQLite opened the database
// read-only. When that open fails with SQLITE_READONLY and the DSN's
// journal mode is cleolease's default rather than the caller's, the
// default is what failed (switching a read-only rollback-journal file to
// WAL is a write): the connection is opened again on roDSN, the DSN
// without that default, and kept if SQLite opened it read-only; otherwise
// the first error is returned. A journal mode the caller asked for stays,
// and fails as it does with the base alone. usedDSN is the DSN the
// returned connection was opened with. A DSN that is read-only itself
// (mode=ro, immutable=1, _query_only) needs no question: such connectors
// take no lease anyway.
func (c *Connector) openSQLite(dsn string) (sc sqlbase.Conn, readOnly bool, usedDSN string, err error) {
	sc, readOnly, err = c.drvBase.Open(dsn, !c.readOnly)
	if err == nil {
		return sc, readOnly, dsn, nil
	}
	if code, ok := sqlbase.Code(err); dsn == c.roDSN || !ok || code.Code != sqlbase.ReadOnly {
		return nil, false, "", err
	}
	sc, readOnly, rerr := c.drvBase.Open(c.roDSN, !c.readOnly)
	if rerr != nil {
		return nil, false, "", err
	}
	if !readOnly {
		sc.Close()
		return nil, false, "", err
	}
	return sc, true, c.roDSN, nil
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
		st, err = migrate.Version(ctx, migrate.Options{DSN: dsn, Base: c.drvBase, SourceURL: url, FS: fsys, Table: c.cfg.MigrationsTable})
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
