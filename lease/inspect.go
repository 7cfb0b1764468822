package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// ErrNoLeaseTables: Inspect found a database without _writer_leases.
var ErrNoLeaseTables = errors.New("database has no lease tables (no cleolease process has written to it)")

// Inspect reports every lane of the database at path, like Engine.Status,
// without opening an engine and without writing anything: the database is
// opened read-only and the sidecar, if present, only to test locks.
// Errors: os.ErrNotExist for a missing file, SQLite's error for a file that
// is not a database, ErrNoLeaseTables, ErrUntrusted.
func Inspect(ctx context.Context, path string, clock Clock) ([]LaneStatus, error) {
	if clock == nil {
		clock = SystemClock{}
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	resolved, _, _, err := FileKey(path)
	if err != nil {
		return nil, err
	}
	db, err := OpenReadOnly(resolved)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_writer_leases'`).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoLeaseTables
	}
	side, err := openSidecarReadOnly(resolved)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	if side != nil {
		defer side.f.Close()
	}
	probe := func(h holder) verdict { return probeHolder("", side, h) }
	return readStatus(ctx, db, probe, clock)
}

// OpenReadOnly opens path on the raw go-sqlite3 driver read-only
// (mode=ro), for tools that must not write to the file.
func OpenReadOnly(path string) (*sql.DB, error) {
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: "mode=ro&_busy_timeout=5000"}
	db := sql.OpenDB(&leaseConnector{dsn: u.String(), readOnly: true})
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
