package migrate

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4/database"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// dbDriver is the golang-migrate database.Driver of the private database.
// It does what golang-migrate's sqlite3 driver
// (github.com/golang-migrate/migrate/v4/database/sqlite3, which links
// go-sqlite3 and is not imported) would do around it — create the version
// table, the in-process Lock flag, Close closing the database — and runs
// migrations its own way. golang-migrate's Migrate.runMigrations calls,
// for each migration,
//
//	SetVersion(target, true)   // "target, dirty", committed on its own
//	Run(body)                  // only when the migration has a body
//	SetVersion(target, false)  // "target, clean"
//
// and Force calls SetVersion(v, false) alone. dbDriver defers the first
// call: it only records the step. Run then commits the body and the clean
// version in one fenced transaction (or, with NoTxWrap, writes the dirty
// marker and runs the body as it is), and the closing SetVersion has
// nothing left to do; a step without a body, and Force, write the clean
// version in a fenced transaction of their own. Because nothing is written
// before the body has been read in full, golang-migrate's buffering
// goroutine always finishes.
type dbDriver struct {
	r      *runner
	locked atomic.Bool // golang-migrate's in-process lock (Lock, Unlock)
	cur    int         // the version as last read or written
	step   *step       // the migration between SetVersion(v, true) and SetVersion(v, false)
}

type step struct {
	from, to  int
	started   time.Time
	committed bool // Run committed the body and the clean version
}

var _ database.Driver = (*dbDriver)(nil)

// Open is not used: the driver is always made with WithInstance.
func (d *dbDriver) Open(string) (database.Driver, error) {
	return nil, errors.New("cleolease/migrate: Open is not supported")
}

// ensureVersionTable is golang-migrate's sqlite3 WithInstance after its
// configuration: it pings the database, then, holding Lock, creates the
// version table and the unique index on its version with the statements
// golang-migrate's sqlite3 driver runs (v4.20.1, ensureVersionTable; the
// index is named version_unique whatever the table, so a second version
// table in the file gets none). golang-migrate runs them without a
// context; here they run under the operation's.
func (d *dbDriver) ensureVersionTable() (err error) {
	ctx := d.r.ctx
	if err := d.r.db.PingContext(ctx); err != nil {
		return err
	}
	if err := d.Lock(); err != nil {
		return err
	}
	defer func() {
		if e := d.Unlock(); e != nil {
			err = errors.Join(err, e)
		}
	}()
	query := fmt.Sprintf(`
	CREATE TABLE IF NOT EXISTS %s (version uint64,dirty bool);
  CREATE UNIQUE INDEX IF NOT EXISTS version_unique ON %s (version);
  `, d.r.o.Table, d.r.o.Table)
	t, err := d.turn()
	if err != nil {
		return err
	}
	defer t.End()
	_, err = d.r.db.ExecContext(ctx, query)
	return err
}

// Close closes the private database.
func (d *dbDriver) Close() error { return d.r.db.Close() }

// Lock is golang-migrate's sqlite3 driver's in-process flag: it fails with
// database.ErrLocked while the flag is set. The lease is what excludes
// other processes.
func (d *dbDriver) Lock() error {
	if !d.locked.CompareAndSwap(false, true) {
		return database.ErrLocked
	}
	return nil
}

// Unlock clears the flag; it fails with database.ErrNotLocked when it is
// not set.
func (d *dbDriver) Unlock() error {
	if !d.locked.CompareAndSwap(true, false) {
		return database.ErrNotLocked
	}
	return nil
}

// Drop is refused: golang-migrate's sqlite3 Drop leaks a result set (and
// with it the one private connection), and this package does not
// reimplement it.
func (d *dbDriver) Drop() error {
	return errors.New("cleolease/migrate: Drop is not supported")
}

// Version reads the version table; errors are reported (golang-migrate's
// sqlite3 driver reports any error as "no version").
func (d *dbDriver) Version() (int, bool, error) {
	v, dirty, err := readVersion(d.r.ctx, d.r.db, d.r.o.Table)
	if err == nil {
		d.cur = v
	}
	return v, dirty, err
}

func (d *dbDriver) SetVersion(version int, dirty bool) error {
	if dirty {
		d.step = &step{from: d.cur, to: version, started: time.Now()}
		return nil
	}
	s := d.step
	d.step = nil
	if s != nil && s.to == version && s.committed {
		return nil
	}
	if err := d.writeVersion(version, false); err != nil {
		if s != nil {
			return d.failure(s, err, d.r.o.NoTxWrap)
		}
		return err
	}
	d.cur = version
	if s != nil {
		d.applied(s)
	}
	return nil
}

func (d *dbDriver) Run(migration io.Reader) error {
	body, err := io.ReadAll(migration)
	s := d.step
	if s == nil {
		return errors.New("cleolease/migrate: internal error: Run without SetVersion")
	}
	if err != nil {
		return d.failure(s, fmt.Errorf("reading the migration: %w", err), false)
	}
	if err := d.r.ctx.Err(); err != nil {
		return d.failure(s, err, false)
	}
	if d.r.o.NoTxWrap {
		return d.runNoTx(s, body)
	}
	err = d.tx(func(sc sqlbase.Conn) error {
		if _, err := sc.ExecContext(d.r.ctx, string(body), nil); err != nil {
			return err
		}
		if d.autoCommit(sc) {
			return errTxEnded
		}
		return d.versionSQL(sc, s.to, false)
	})
	if errors.Is(err, errTxEnded) {
		// The body's own COMMIT (or ROLLBACK) ended the transaction: part
		// of it may be committed, with no trace in the version table.
		// Mark the version dirty so that a human looks.
		if derr := d.writeVersion(s.to, true); derr != nil {
			return d.failure(s, errors.Join(err, derr), false)
		}
		d.cur = s.to
		return d.failure(s, err, true)
	}
	if err != nil {
		return d.failure(s, err, false)
	}
	s.committed = true
	d.cur = s.to
	d.applied(s)
	return nil
}

var errTxEnded = errors.New("the migration ended the transaction it runs in (a COMMIT or ROLLBACK in the file); run such files with NoTxWrap (_migrations_no_tx_wrap=true)")

// runNoTx is golang-migrate's own protocol: dirty marker, body, and the
// clean marker in the closing SetVersion. The body runs as golang-migrate's
// sqlite3 driver runs it with NoTxWrap: one Exec of the whole file, which
// the context does not interrupt.
func (d *dbDriver) runNoTx(s *step, body []byte) error {
	if err := d.writeVersion(s.to, true); err != nil {
		return d.failure(s, err, false)
	}
	d.cur = s.to
	// The file's own transactions (or its autocommit statements) run
	// inside one write turn: the whole Exec of the file.
	t, err := d.turn()
	if err != nil {
		return d.failure(s, err, true)
	}
	err = d.raw(func(sc sqlbase.Conn) error {
		_, err := sc.ExecContext(context.WithoutCancel(d.r.ctx), string(body), nil)
		return err
	})
	t.End()
	if err != nil {
		// A file that failed between its BEGIN and COMMIT leaves the
		// transaction open on the connection: roll it back.
		d.rollbackOpen()
		return d.failure(s, err, true)
	}
	return nil
}

// applied logs a finished step.
func (d *dbDriver) applied(s *step) {
	if l := d.r.o.Logger; l != nil {
		v, down := s.migration()
		l.Info("cleolease: migration applied", "version", v, "name", d.r.name(v, !down),
			"down", down, "took", time.Since(s.started))
	}
}

// migration is the file a step runs: its version and direction.
func (s *step) migration() (v uint, down bool) {
	if s.to > s.from || s.from == NilVersion {
		return uint(s.to), false
	}
	return uint(s.from), true
}

// failure builds the *Error of a failed step. dirty reports the database
// left dirty at s.to; otherwise it is at s.from, clean.
func (d *dbDriver) failure(s *step, cause error, dirty bool) error {
	v, down := s.migration()
	e := &Error{Op: d.r.op, Version: v, Name: d.r.name(v, !down), File: d.r.file(v, !down), Down: down, Current: s.from, Err: cause}
	if dirty {
		e.Dirty, e.Current = true, s.to
	}
	return e
}

// writeVersion records version in its own fenced transaction.
func (d *dbDriver) writeVersion(version int, dirty bool) error {
	return d.tx(func(sc sqlbase.Conn) error { return d.versionSQL(sc, version, dirty) })
}

// versionSQL replaces the version table's row, as golang-migrate's
// sqlite3 SetVersion does (a NilVersion row is kept only when dirty).
func (d *dbDriver) versionSQL(sc sqlbase.Conn, version int, dirty bool) error {
	ctx := d.r.ctx
	if _, err := sc.ExecContext(ctx, "DELETE FROM "+d.r.o.Table, nil); err != nil {
		return err
	}
	if version >= 0 || (version == NilVersion && dirty) {
		_, err := sc.ExecContext(ctx, "INSERT INTO "+d.r.o.Table+" (version, dirty) VALUES (?, ?)",
			[]driver.NamedValue{{Ordinal: 1, Value: int64(version)}, {Ordinal: 2, Value: dirty}})
		return err
	}
	return nil
}

// tx runs fn inside BEGIN IMMEDIATE on the private connection and commits
// after checking the context and the fence (when a lease is held). On any
// error the transaction is rolled back. COMMIT and ROLLBACK do not watch
// the context, so a cancellation never leaves the outcome unknown.
func (d *dbDriver) tx(fn func(sc sqlbase.Conn) error) error {
	t, err := d.turn()
	if err != nil {
		return err
	}
	defer t.End()
	return d.raw(func(sc sqlbase.Conn) error {
		ctx := d.r.ctx
		bg := context.WithoutCancel(ctx)
		if _, err := sc.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
			return err
		}
		var fence *lease.Fencing
		var err error
		if d.r.hold != nil {
			// Checked right after BEGIN too, so that a migration that
			// drops or empties the lease tables commits (lease.Fencing).
			fence, _, err = d.r.hold.FenceBegin(ctx, sc)
		}
		if err == nil {
			err = fn(sc)
		}
		if err == nil {
			// A base interrupts a statement when ctx ends, but a
			// statement that finishes first does not notice: a cancelled
			// context must not commit.
			err = ctx.Err()
		}
		if err == nil && fence != nil {
			err = fence.Check(ctx, sc, !d.autoCommit(sc))
		}
		if err == nil {
			_, err = sc.ExecContext(bg, "COMMIT", nil)
			if err == nil && fence != nil {
				fence.Committed()
			}
		}
		if err != nil && !d.autoCommit(sc) {
			sc.ExecContext(bg, "ROLLBACK", nil)
		}
		return err
	})
}

// turn takes the file's write turn (lease.Engine.TakeTurn) for one write
// transaction of the migration, as every leased writer does, so that the
// migration waits for the writers of other lanes in the kernel, not in
// SQLite's busy handler; nil without an engine. It waits for another
// goroutine of this process at most 5 s (then goes on without the turn),
// for other processes as long as the context allows.
func (d *dbDriver) turn() (*lease.WriteTurn, error) {
	if d.r.o.Engine == nil || d.r.hold == nil {
		return nil, nil
	}
	return d.r.o.Engine.TakeTurn(d.r.ctx, func() time.Duration { return 5 * time.Second }, -1)
}

// autoCommit reports whether sc is outside any transaction (the base's
// sqlite3_get_autocommit).
func (d *dbDriver) autoCommit(sc sqlbase.Conn) bool { return d.r.o.Base.AutoCommit(sc) }

// rollbackOpen rolls back a transaction left open on the private
// connection.
func (d *dbDriver) rollbackOpen() {
	d.raw(func(sc sqlbase.Conn) error {
		if !d.autoCommit(sc) {
			sc.ExecContext(context.WithoutCancel(d.r.ctx), "ROLLBACK", nil)
		}
		return nil
	})
}

// raw runs fn on the private connection (taken from the pool and given
// back, so that the version reads can use it between calls): the
// connection privateConnector opened on the base.
func (d *dbDriver) raw(fn func(sc sqlbase.Conn) error) error {
	conn, err := d.r.db.Conn(context.WithoutCancel(d.r.ctx))
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(sqlbase.Conn)
		if !ok {
			return fmt.Errorf("cleolease/migrate: internal error: private connection is %T", dc)
		}
		return fn(sc)
	})
}
