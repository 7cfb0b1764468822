package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/workload"
	"github.com/cleocode/cleolease/lease"
)

// checkDBFile fails with one clear line unless path names an existing
// regular file. It only stats.
func checkDBFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil && looksLikeDSN(path):
		// Not only "no such file": on Windows a name with '?' (or a
		// ':' after the first two characters) is invalid
		// (ERROR_INVALID_NAME).
		return usagef("%s: DB is a file path, not a DSN (for example %s)", path, dsnPath(path))
	case errors.Is(err, fs.ErrNotExist):
		return &exitError{1, fmt.Errorf("%s: %w", path, errNoSuchFile)}
	case err != nil:
		return failf("%s: %v", path, unwrapPathErr(err))
	case st.IsDir():
		return failf("%s: is a directory, not an SQLite database", path)
	case !st.Mode().IsRegular():
		return failf("%s: not a regular file", path)
	case st.Size() == 0:
		return nil
	}
	// Whether it is an SQLite database is left to SQLite (ErrNotADB, see
	// sqliteFailure): nothing here opens the file itself, since closing a
	// descriptor of it would drop this process's SQLite locks on it.
	return nil
}

// errNoSuchFile is checkDBFile's answer for a path that names nothing.
var errNoSuchFile = errors.New("no such file")

// createDBFile creates the missing database file path through SQLite (an
// empty file is an empty database), as golang-migrate's sqlite3 driver does
// when it opens a missing file. Its directory must exist.
func createDBFile(ctx context.Context, path string) error {
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return failf("%s: no such directory: %s", path, filepath.Dir(path))
	}
	dsn, err := fileURI(path, "mode=rwc")
	if err != nil {
		return failf("%s: %v", path, err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return failf("%s: %v", path, err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return sqliteFailure(path, err)
	}
	return nil
}

// looksLikeDSN reports a command-line DB that is a DSN rather than a file
// path: a "file:" URI or a path with a query.
func looksLikeDSN(s string) bool {
	return strings.HasPrefix(s, "file:") || strings.Contains(s, "?")
}

// dsnPath is the file path a DSN most likely names, for the hint: the part
// before '?', without "file:" (and "//localhost" or "//").
func dsnPath(dsn string) string {
	p, _, _ := strings.Cut(dsn, "?")
	p = strings.TrimPrefix(p, "file:")
	if rest, ok := strings.CutPrefix(p, "//"); ok {
		p = strings.TrimPrefix(rest, "localhost")
	}
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return p
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileURI is workload.FileURI: an SQLite "file:" URI for path (made
// absolute) with the given query, escaping '?', '#' and '%'.
var fileURI = workload.FileURI

// readOnly runs fn on a connection to path that writes nothing and
// creates no file (lease.ReadOnly), after checking the file; failures to
// open or read it become one clear line.
func readOnly(ctx context.Context, path string, fn func(db *sql.DB) error) error {
	if err := checkDBFile(path); err != nil {
		return err
	}
	var fnErr error
	err := lease.ReadOnly(ctx, mattn.For(nil), path, func(db *sql.DB) error {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master`).Scan(&n); err != nil {
			return err // not a database: reported as one line below
		}
		fnErr = fn(db)
		return fnErr
	})
	switch {
	case err == nil || err == fnErr:
		return err
	case errors.As(err, new(sqlite3.Error)):
		return sqliteFailure(path, err)
	}
	return failf("%s: %v", path, unwrapPathErr(err))
}

func sqliteFailure(path string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB:
			return failf("%s: not an SQLite database (%v)", path, se)
		case sqlite3.ErrCorrupt:
			return failf("%s: database file is corrupt (%v)", path, se)
		}
	}
	return failf("%s: %v", path, err)
}

// leaseFailure is a failure of the lease engine on path as one line,
// without the engine's "cleolease: OP on PATH" preamble, which repeats
// the command's name and path: "app.db: open: open app.db-cleolease: is a
// directory".
func leaseFailure(path string, err error) error {
	if rf := replicaFailure(path, err); rf != nil {
		return rf
	}
	var le *lease.Error
	if !errors.As(err, &le) {
		return sqliteFailure(path, err)
	}
	what := le.Op
	if le.Scope != "" || le.Lane != "" {
		what += " " + le.Scope + "/" + le.Lane
	}
	reason := ""
	if le.Reason != "" {
		reason = " (" + le.Reason + ")"
	}
	return failf("%s: %s: %v%s", path, what, le.Err, reason)
}

// leaseTables reports whether the file has cleolease's lease tables.
func leaseTables(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name IN ('_writer_leases', '_writer_queue')`).Scan(&n)
	return n == 2, err
}

// requireLeaseTables fails unless db has the lease tables.
func requireLeaseTables(ctx context.Context, db *sql.DB, path string) error {
	ok, err := leaseTables(ctx, db)
	if err != nil {
		return sqliteFailure(path, err)
	}
	if !ok {
		return failf("%s: %s", path, noLeaseTables)
	}
	return nil
}

// noLeaseTables is why a file has no lanes to show.
const noLeaseTables = "no cleolease lease tables (_writer_leases, _writer_queue): no process has opened it with cleolease"

// migrationState is what golang-migrate's version table says.
type migrationState struct {
	Table   string `json:"table"`
	Present bool   `json:"present"`           // the table exists
	Version *int64 `json:"version,omitempty"` // nil: no migration recorded
	Dirty   bool   `json:"dirty"`
}

func (m migrationState) String() string {
	switch {
	case !m.Present:
		return fmt.Sprintf("no %s table", m.Table)
	case m.Version == nil:
		return "no version recorded"
	case m.Dirty:
		return fmt.Sprintf("version %d, DIRTY (a migration failed half-way; repair the schema by hand, then 'cleolease migrate DB force V')", *m.Version)
	}
	return fmt.Sprintf("version %d, clean", *m.Version)
}

// readMigrationState reads golang-migrate's version table (sqlite3 driver
// layout: one row, version and dirty) without writing.
func readMigrationState(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, table string) (migrationState, error) {
	st := migrationState{Table: table}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
		return st, err
	}
	if n == 0 {
		return st, nil
	}
	st.Present = true
	var v int64
	var dirty bool
	err := q.QueryRowContext(ctx, `SELECT version, dirty FROM "`+strings.ReplaceAll(table, `"`, `""`)+`" LIMIT 1`).Scan(&v, &dirty)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil
	case err != nil:
		return st, err
	}
	st.Version, st.Dirty = &v, dirty
	return st, nil
}
