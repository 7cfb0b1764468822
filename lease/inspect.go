package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

// ErrNoLeaseTables: Inspect found a database without _writer_leases.
var ErrNoLeaseTables = errors.New("database has no lease tables (no cleolease process has written to it)")

// Inspect reports every lane of the database at path, like Engine.Status,
// without opening an engine and without writing to the database or the
// liveness locks' files: the database is read through ReadOnly, and the
// liveness locks' files (the sidecar, or the lock directory), if present,
// are opened read-only only to test locks. To name the waiters that have
// only registered with a lane's holder (LaneStatus), it asks each live
// holder over the doorbell, from a socket of its own: abstract on Linux
// (no file); in the portable tier a socket file in the lock directory,
// removed before it returns. A holder that does not answer within half a
// second is reported in LaneStatus.Note. sidecarDir is the directory the
// processes that use the file keep their liveness files in
// (Options.SidecarDir, the DSN's _lease_sidecar_dir), or "" for beside the
// database: the lock files and the holders' doorbells are looked up there.
// base opens the database (see ReadOnly). Errors: os.ErrNotExist for a missing file, SQLite's error for a file
// that is not a database, ErrNoLeaseTables, ErrUntrusted.
func Inspect(ctx context.Context, base sqlbase.Base, path, sidecarDir string, clock Clock) ([]LaneStatus, error) {
	var out []LaneStatus
	err := ReadOnly(ctx, base, path, func(db *sql.DB) error {
		var err error
		out, err = InspectDB(ctx, db, path, sidecarDir, clock)
		return err
	})
	return out, err
}

// InspectDB is Inspect on a connection the caller opened to the file at
// path (typically with ReadOnly); path and sidecarDir (see Inspect) locate
// the liveness locks' files.
func InspectDB(ctx context.Context, db *sql.DB, path, sidecarDir string, clock Clock) ([]LaneStatus, error) {
	if clock == nil {
		clock = SystemClock{}
	}
	resolved, dev, ino, err := FileKey(path)
	if err != nil {
		return nil, err
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = '_writer_leases'`).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoLeaseTables
	}
	base := sidecarBase(resolved, dev, ino, sidecarDir)
	locks, err := platform.OpenLocksReadOnly(base)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	if locks != nil {
		defer locks.Close()
	}
	probe := func(h holder) verdict { return probeHolder("", locks, h, false) }
	ask := func(qs []holderQuery) (map[laneKey]*holderAnswer, string) {
		return askHolders(base, platform.FileID{Dev: dev, Ino: ino}, qs, holderAnswerWait)
	}
	out, err := readStatus(ctx, db, probe, clock, locks, ask)
	if err == nil && locks == nil && platform.KeepsLocks {
		// No liveness locks' files: no process has the database open
		// through cleolease (each keeps its lifetime lock there), so none
		// waits. Waiting is -1 only where waiting cannot be told.
		for i := range out {
			out[i].Waiting = max(out[i].Waiting, 0)
		}
	}
	return out, err
}

// ReadOnly runs fn on a connection to path, opened by base (never through
// cleolease), that writes nothing and creates no file.
//
// mode=ro is enough while the database is in use, but on a WAL-mode file
// that nobody has open (there is no -wal file) a mode=ro connection
// creates the -wal and -shm files and leaves them behind. So while there
// is neither a -wal nor a -journal file, fn runs on an immutable=1
// connection instead (no locks, no side files), which reads exactly what
// is there since everything is in the main file; if the main file, the
// -wal or the -journal changed meanwhile (a process opened the database
// and wrote), fn runs again, from the third attempt on with mode=ro.
//
// Only SQLite opens the database file: its header is not read here, since
// closing any descriptor of the file would drop every POSIX lock this
// process holds on it, SQLite's included (sqlite.org/howtocorrupt.html
// §2.2); the side files are only looked up.
func ReadOnly(ctx context.Context, base sqlbase.Base, path string, fn func(db *sql.DB) error) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	resolved, _, _, err := FileKey(path)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		before, err := quietState(resolved)
		if err != nil {
			return err
		}
		immutable := !before.walExists && !before.journalExists && attempt < 2
		db := sql.OpenDB(&leaseConnector{dsn: base.InspectDSN(resolved, immutable, 5*time.Second), base: base, readOnly: true})
		db.SetMaxOpenConns(1)
		err = db.PingContext(ctx)
		if err == nil {
			err = fn(db)
		}
		db.Close()
		if !immutable {
			return err
		}
		if after, serr := quietState(resolved); serr == nil && after == before {
			return err
		}
	}
}

// fileQuiet is what ReadOnly compares to notice a writer.
type fileQuiet struct {
	walExists, journalExists bool
	size, mtime              int64
	dev, ino                 uint64
}

// quietState stats the database file and looks its -wal and -journal up,
// opening none of them.
func quietState(path string) (fileQuiet, error) {
	var q fileQuiet
	fi, err := os.Stat(path)
	if err != nil {
		return q, err
	}
	q.size, q.mtime = fi.Size(), fi.ModTime().UnixNano()
	_, q.dev, q.ino, _ = FileKey(path)
	_, err = os.Lstat(path + "-wal")
	q.walExists = err == nil
	_, err = os.Lstat(path + "-journal")
	q.journalExists = err == nil
	return q, nil
}
