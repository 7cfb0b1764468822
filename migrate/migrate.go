// Package migrate runs golang-migrate migrations on an SQLite file shared by
// several processes, exactly once, under cleolease's cold-open lease.
//
// golang-migrate's sqlite3 driver locks only inside one process (its Lock is
// an atomic flag), so processes that open a fresh file at the same moment
// would each apply the migrations. Here every operation that writes — Up,
// Steps, Down, Goto, Force — first takes the writer lease of the lane
// (Scope, Lane) = ("cleolease", "migrate") through Options.Engine, a lane
// of its own, at priority 0: one process migrates; Up in the others waits
// — watching the version table, and queueing for the lease only while no
// live process holds it — and returns as soon as the database is current.
// A long migration is never taken over while its process lives (the lease
// engine judges liveness by a lock the holder keeps, not by its heartbeat,
// which the migration's hold on SQLite's write lock delays), and a crashed
// holder is recognised at once: the next process reruns the migration it
// was in. The lease is never degraded: the wait is bounded only by the
// context (and by Options.Wait when set, with an error).
//
// Migrations run on a private *sql.DB with one connection, opened on the
// SQLite driver Options.Base names, from Options.DSN: never on a caller's
// *sql.DB (golang-migrate's Close closes the database it was given) and
// never through the cleolease driver. The package imports no SQLite driver
// itself: it reaches SQLite only through Options.Base
// (internal/sqlbase.Driver), and uses golang-migrate's migrate and
// database packages, never its sqlite3 driver, whose version table, lock
// and Close it does itself (see dbDriver in driver.go).
//
// # Atomic migrations
//
// golang-migrate records "version V, dirty" in its own transaction before
// it runs migration V, and "V, clean" after, so a failure or a crash leaves
// V dirty even when the migration's transaction rolled back and changed
// nothing. Here, unless Options.NoTxWrap is set, a migration's body and its
// clean version are committed in one transaction:
//
//	BEGIN IMMEDIATE; <body>; <version table := V, clean>; <fencing check>; COMMIT
//
// A failure, a cancelled context or a SIGKILL therefore leaves the previous
// version, clean, and the next run simply applies V again. The fencing check
// (lease.Hold.Fence) makes sure the process still holds the lease at the
// commit.
//
// With Options.NoTxWrap (files that manage their own transaction or set
// PRAGMAs such as foreign_keys, which SQLite ignores inside a transaction)
// golang-migrate's dirty marker is kept: a migration that fails or is
// interrupted leaves the database dirty at its version, and every later
// run fails with an *Error matching ErrDirty until someone repairs the
// schema and calls Force. Nothing is forced automatically.
//
//snippet:nocompile BEGIN IMMEDIATE
package migrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source"
	_ "github.com/golang-migrate/migrate/v4/source/file" // file:// source URLs
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// The lane of the cold-open lease. It is a lane of its own, so migrations
// never queue behind (or block) an application lane.
const (
	Scope = "cleolease"
	Lane  = "migrate"
)

// DefaultTable is the version table used when Options.Table is empty
// (golang-migrate's default).
const DefaultTable = "schema_migrations"

// NilVersion is the version of a database no migration was applied to.
const NilVersion = -1

// Options say where the database and the migrations are and how to run
// them. DSN, Base and, for the operations that migrate, one of SourceURL or
// FS are required.
type Options struct {
	// DSN opens the private connection with Base: the database's DSN in
	// Base's dialect, without cleolease's parameters (its busy timeout
	// bounds waits for writers of other lanes).
	DSN string
	// Base is the SQLite driver the private connection opens on, as the
	// application configured it (extensions, a connection hook that
	// migrations may rely on), e.g. internal/mattn.For(drv) for a
	// go-sqlite3 *sqlite3.SQLiteDriver. Every operation requires it. The
	// connection that runs golang-migrate's files, which also carries the
	// lease's fencing and the version table, opens with Base.OpenPrivate:
	// the callbacks the application's hook registers (update, commit,
	// rollback and pre-update hooks, authorizer, trace) are cleared on it.
	// Run's connection, which carries only the function's statements,
	// opens with Base.Open and keeps them.
	Base sqlbase.Driver

	// SourceURL is a golang-migrate source URL, e.g. "file://migrations".
	// The file source is built in; import other golang-migrate source
	// drivers for their schemes.
	SourceURL string
	// FS, when set, is the source instead of SourceURL (golang-migrate's
	// iofs layout at its root: 1_name.up.sql, 1_name.down.sql, ...), e.g.
	// an embed.FS narrowed with fs.Sub.
	FS fs.FS

	// Table is the version table; empty means DefaultTable. It must be a
	// plain identifier ([A-Za-z_][A-Za-z0-9_]*).
	Table string
	// NoTxWrap runs each migration file as it is, without the runner's
	// transaction, for files with their own BEGIN/COMMIT or PRAGMAs (see
	// the package documentation for what a failure then leaves behind).
	NoTxWrap bool

	// Engine is the lease engine of the database file. Nil runs without a
	// lease: for mode off, where the caller accepts that processes opening
	// the file at once may race, and for shared in-memory databases (one
	// process; the caller serialises its runs).
	Engine *lease.Engine
	// Wait bounds the wait for the lease; when it passes, the operation
	// fails with an error matching lease.ErrUnavailable. Zero means no
	// bound but the context.
	Wait time.Duration

	// Logger receives one Info record per migration applied and the
	// warnings below; nil is silent.
	Logger *slog.Logger
}

// Status is a database's migration state.
type Status struct {
	// Version is the last migration applied, NilVersion when none.
	Version int
	// Dirty reports a migration that started and did not finish (only
	// possible with NoTxWrap or other tools).
	Dirty bool
	// Latest is the newest migration in the source, NilVersion when the
	// source is empty or none was given.
	Latest int
	// Pending counts the source's migrations newer than Version.
	Pending int
}

// Up applies every pending migration, one at a time, under the lease. A
// database already at (or past) the source's newest version is left
// untouched, and no lease is taken for finding that out. A database newer
// than every migration in the source (a newer program migrated it) is
// accepted with a warning.
//
// Processes that find another one migrating wait for it (see the package
// documentation) and return as soon as the database is current.
//
// Errors: an *Error matching ErrFailed that names the migration that failed
// and its cause (errors.As reaches the SQLite error); an *Error matching
// ErrDirty when the database is dirty; an error matching the context's
// error when ctx ended while waiting or migrating; a *lease.Error matching
// lease.ErrUnavailable when Options.Wait passed; other errors for a bad
// source or an unreadable database.
func Up(ctx context.Context, o Options) error {
	return runOp(ctx, o, "up", true, func(r *runner) error {
		for {
			st, err := r.state()
			if err != nil {
				return err
			}
			if r.upToDate(st.Version) {
				r.warnAhead(st.Version)
				return nil
			}
			if err := r.step(1); err != nil {
				return err
			}
		}
	})
}

// Steps applies n pending migrations (n > 0) or reverts the -n most recent
// ones (n < 0), under the lease, stopping early at the newest migration or
// at NilVersion. Errors as for Up.
func Steps(ctx context.Context, o Options, n int) error {
	return runOp(ctx, o, "steps", false, func(r *runner) error {
		for ; n != 0; n -= sign(n) {
			st, err := r.state()
			if err != nil {
				return err
			}
			if (n > 0 && r.upToDate(st.Version)) || (n < 0 && st.Version == NilVersion) {
				return nil
			}
			if err := r.step(sign(n)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Down reverts the n most recent migrations (n >= 1), stopping at
// NilVersion. It is Steps(ctx, o, -n).
func Down(ctx context.Context, o Options, n int) error {
	if n < 1 {
		return fmt.Errorf("cleolease/migrate: down %d: the count must be at least 1", n)
	}
	return Steps(ctx, o, -n)
}

// Goto migrates up or down, one migration at a time, until the database is
// at version v, which must be a migration of the source. Errors as for Up.
func Goto(ctx context.Context, o Options, v uint) error {
	return runOp(ctx, o, "goto", false, func(r *runner) error {
		if !slices.Contains(r.versions, v) {
			return fmt.Errorf("cleolease/migrate: goto %d: no migration %d in the source", v, v)
		}
		for {
			st, err := r.state()
			if err != nil {
				return err
			}
			dir := 1
			switch {
			case st.Version == int(v):
				return nil
			case st.Version > int(v):
				dir = -1
			}
			if err := r.step(dir); err != nil {
				return err
			}
			after, err := r.state()
			if err != nil {
				return err
			}
			if after.Version == st.Version {
				return fmt.Errorf("cleolease/migrate: goto %d: no progress from version %d", v, st.Version)
			}
		}
	})
}

// Force records version v (NilVersion or more), clean, without running any
// migration: the repair step after fixing a dirty database by hand. It
// takes the lease like every write. Errors: a *lease.Error as for Up, or
// the SQLite error.
func Force(ctx context.Context, o Options, v int) error {
	if v < NilVersion {
		return fmt.Errorf("cleolease/migrate: force %d: the version must be %d or more", v, NilVersion)
	}
	return runOp(ctx, o, "force", false, func(r *runner) error {
		return r.convert(r.m.Force(v))
	})
}

// Version reads the database's migration state without the lease and
// without writing (the version table is not created; SQLite creates a
// missing database file unless the DSN opens it read-only). Latest and Pending
// are filled in when o names a source; DSN is the only required option.
func Version(ctx context.Context, o Options) (Status, error) {
	st := Status{Version: NilVersion, Latest: NilVersion}
	o, err := o.normalize(false)
	if err != nil {
		return st, err
	}
	var versions []uint
	if o.SourceURL != "" || o.FS != nil {
		src, err := o.openSource()
		if err != nil {
			return st, err
		}
		versions, err = listVersions(src)
		src.Close()
		if err != nil {
			return st, err
		}
	}
	db := openPrivate(o, false)
	defer db.Close()
	st.Version, st.Dirty, err = readVersion(ctx, db, o.Table)
	if err != nil {
		return st, err
	}
	if len(versions) > 0 {
		st.Latest = int(versions[len(versions)-1])
	}
	for _, v := range versions {
		if int(v) > st.Version {
			st.Pending++
		}
	}
	return st, nil
}

func sign(n int) int {
	if n < 0 {
		return -1
	}
	return 1
}

// normalize checks o and fills in defaults.
func (o Options) normalize(needSource bool) (Options, error) {
	if o.DSN == "" {
		return o, errors.New("cleolease/migrate: Options.DSN is empty")
	}
	if o.Base == nil {
		return o, errors.New("cleolease/migrate: Options.Base is nil: it names the SQLite driver the private connection opens on")
	}
	if needSource && o.SourceURL == "" && o.FS == nil {
		return o, errors.New("cleolease/migrate: no migration source (Options.SourceURL or Options.FS)")
	}
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if !ValidTableName(o.Table) {
		return o, fmt.Errorf("cleolease/migrate: version table %q is not a plain SQL identifier", o.Table)
	}
	return o, nil
}

func (o Options) openSource() (source.Driver, error) {
	if o.FS != nil {
		src, err := iofs.New(o.FS, ".")
		if err != nil {
			return nil, fmt.Errorf("cleolease/migrate: migration source: %w", err)
		}
		return src, nil
	}
	src, err := source.Open(o.SourceURL)
	if err != nil {
		// golang-migrate's file driver reports a missing directory as
		// "open .: no such file or directory": name the directory.
		if u, perr := url.Parse(o.SourceURL); perr == nil && u.Scheme == "file" {
			dir := u.Host + u.Path
			if _, serr := os.Stat(dir); serr != nil {
				return nil, fmt.Errorf("cleolease/migrate: migration source %q: directory %s: %w", o.SourceURL, dir, serr)
			}
		}
		return nil, fmt.Errorf("cleolease/migrate: migration source %q: %w", o.SourceURL, err)
	}
	return src, nil
}

// listVersions returns the source's migration versions in order.
func listVersions(src source.Driver) ([]uint, error) {
	var out []uint
	v, err := src.First()
	for err == nil {
		out = append(out, v)
		v, err = src.Next(v)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cleolease/migrate: reading the migration source: %w", err)
	}
	return out, nil
}

// ValidTableName reports whether s is a plain SQL identifier,
// [A-Za-z_][A-Za-z0-9_]*: the names accepted for the version table (it is
// spliced into golang-migrate's SQL unquoted).
func ValidTableName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '_', 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z':
		case '0' <= b && b <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// privateConnector opens the private connection on Options.Base.
type privateConnector struct {
	base sqlbase.Driver
	dsn  string
	// keepCallbacks opens with Base.Open, which keeps the callbacks the
	// application's connection hook registers (Run's connection carries
	// only the caller's statements); otherwise Base.OpenPrivate clears
	// them, as the connection also runs the lease's fencing.
	keepCallbacks bool
}

// Connect opens a connection, retrying while the open fails with
// SQLITE_BUSY or SQLITE_LOCKED (sqlbase.IsBusy): the PRAGMAs a base runs
// at open (journal_mode=WAL on a file another process is converting) can
// get SQLITE_BUSY without SQLite's busy handler being consulted. The
// retries end with ctx, with the last busy error.
func (c privateConnector) Connect(ctx context.Context) (driver.Conn, error) {
	wait := 100 * time.Microsecond
	for {
		conn, err := c.open(ctx)
		if err == nil {
			return conn, nil
		}
		if !sqlbase.IsBusy(err) {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// open opens one connection, once. A connection that is not an
// sqlbase.Conn (which every base's is) is closed and refused: the runner
// needs its context-taking calls.
func (c privateConnector) open(ctx context.Context) (driver.Conn, error) {
	if c.keepCallbacks {
		conn, _, err := c.base.Open(c.dsn, false)
		if err != nil {
			return nil, err
		}
		return conn, nil
	}
	conn, err := c.base.OpenPrivate(ctx, c.dsn)
	if err != nil {
		return nil, err
	}
	if _, ok := conn.(sqlbase.Conn); !ok {
		conn.Close()
		return nil, fmt.Errorf("cleolease/migrate: the %s base opened a %T, which lacks the context-taking calls of sqlbase.Conn", c.base.Name(), conn)
	}
	return conn, nil
}

// sqlDriver is what a base may provide for the private database's
// *sql.DB.Driver: the database/sql driver it opens with, as the
// application configured it (internal/mattn's is the *sqlite3.SQLiteDriver
// the application gave). A migration function (Run) may look at it to
// tell the dialect.
type sqlDriver interface {
	SQLDriver() driver.Driver
}

// Driver returns the base's own driver.Driver when it provides one
// (sqlDriver); otherwise a driver.Driver whose Open opens a connection on
// the base the way c does, to the DSN it is given.
func (c privateConnector) Driver() driver.Driver {
	if b, ok := c.base.(sqlDriver); ok {
		if d := b.SQLDriver(); d != nil {
			return d
		}
	}
	return privateDriver{c}
}

// privateDriver is privateConnector's driver.Driver for a base without
// SQLDriver.
type privateDriver struct{ c privateConnector }

func (d privateDriver) Open(dsn string) (driver.Conn, error) {
	c := d.c
	c.dsn = dsn
	return c.Connect(context.Background())
}

// openPrivate returns a *sql.DB of at most one connection on o.Base,
// without the callbacks the application's connection hook registers
// (keepCallbacks false: Base.OpenPrivate) or with them (Base.Open).
func openPrivate(o Options, keepCallbacks bool) *sql.DB {
	db := sql.OpenDB(privateConnector{base: o.Base, dsn: o.DSN, keepCallbacks: keepCallbacks})
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	return db
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readVersion reads the version table, reporting NilVersion when it does
// not exist or is empty. Unlike golang-migrate's sqlite3 Version, a failing
// query is an error, never "no version".
func readVersion(ctx context.Context, q querier, table string) (version int, dirty bool, err error) {
	for attempt := 0; ; attempt++ {
		var v int64
		err = q.QueryRowContext(ctx, `SELECT version, dirty FROM `+table+` LIMIT 1`).Scan(&v, &dirty)
		switch {
		case err == nil:
			return int(v), dirty, nil
		case errors.Is(err, sql.ErrNoRows):
			return NilVersion, false, nil
		}
		// No such table (yet), or a real failure?
		var n int
		if cerr := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); cerr == nil && n == 0 {
			return NilVersion, false, nil
		} else if cerr != nil || attempt > 0 {
			return NilVersion, false, fmt.Errorf("cleolease/migrate: reading the version table: %w", err)
		}
		// The table exists now: another process created it in between.
	}
}

// runner is one operation: the source, the private database, the lease
// and golang-migrate over the wrapping database driver.
type runner struct {
	ctx      context.Context
	o        Options
	op       string
	src      source.Driver
	versions []uint
	db       *sql.DB
	hold     *lease.Hold
	drv      *dbDriver
	m        *migrate.Migrate
}

// runOp opens what an operation needs, takes the lease and runs fn. When
// skipIfCurrent, a database already at the newest version is detected
// before the lease is requested, and again once it is held (another
// process may have migrated meanwhile).
func runOp(ctx context.Context, o Options, op string, skipIfCurrent bool, fn func(*runner) error) (err error) {
	o, err = o.normalize(true)
	if err != nil {
		return err
	}
	src, err := o.openSource()
	if err != nil {
		return err
	}
	r := &runner{ctx: ctx, o: o, op: op, src: src}
	defer func() {
		if cerr := r.close(); err == nil && cerr != nil {
			err = fmt.Errorf("cleolease/migrate: closing: %w", cerr)
		}
	}()
	if r.versions, err = listVersions(src); err != nil {
		return err
	}
	if skipIfCurrent && len(r.versions) == 0 {
		return nil
	}
	r.db = openPrivate(o, false)
	if skipIfCurrent {
		if current, err := r.current(); current || err != nil {
			return err
		}
	}
	if o.Engine != nil {
		if r.hold, err = r.acquire(skipIfCurrent); r.hold == nil || err != nil {
			return err // nil: the database became current meanwhile
		}
		if skipIfCurrent {
			if current, err := r.current(); current || err != nil {
				return err
			}
		}
	}
	r.drv = &dbDriver{r: r, cur: NilVersion}
	if err := r.drv.ensureVersionTable(); err != nil {
		return fmt.Errorf("cleolease/migrate: preparing the version table: %w", err)
	}
	r.m, err = migrate.NewWithInstance("cleolease", src, "sqlite3", r.drv)
	if err != nil {
		return fmt.Errorf("cleolease/migrate: %w", err)
	}
	if o.Logger != nil {
		r.m.Log = migrateLogger{o.Logger}
	}
	start := time.Now()
	err = fn(r)
	observeRun(o, start, err)
	return err
}

// acquired is the outcome of an Acquire running in the background.
type acquired struct {
	h   *lease.Hold
	err error
}

// laneLookEvery is how often a waiter looks at who holds the cold-open
// lane (Engine.Status: a few queries and a liveness probe).
const laneLookEvery = 20 * time.Millisecond

// attempt is an Acquire running in the background.
type attempt struct {
	ch     chan acquired
	cancel context.CancelFunc
}

func (r *runner) startAcquire(opts lease.AcquireOptions) *attempt {
	ctx, cancel := context.WithCancel(r.ctx)
	a := &attempt{ch: make(chan acquired, 1), cancel: cancel}
	go func() {
		h, err := r.o.Engine.Acquire(ctx, Scope, Lane, opts)
		a.ch <- acquired{h, err}
	}()
	return a
}

// acquire takes the cold-open lease. When watch is set it also watches
// the database while it waits, and returns a nil Hold and a nil error as
// soon as the database is current (some other process migrated it).
// Processes racing a cold open thus never take and hand on the lease one
// after the other once the work is done — several write transactions
// apiece, all competing with the migration for SQLite's write lock. While
// another live process holds the lane, a watcher does not even stay in the
// queue (where the lease engine would poll for it too): it withdraws, and
// queues again once the lane is free or its holder has died, to look again
// under the lease. A grant that races a withdrawal is kept.
//
// The interval between looks at the version is an eighth of the time
// waited so far (1 ms to 250 ms), so a waiter notices the end of a
// migration at most about an eighth of its duration late; the lane's
// holder is looked at every laneLookEvery.
//
// Errors: a *lease.Error from Acquire (Options.Wait passed:
// lease.ErrUnavailable), the context's, or the version table's.
func (r *runner) acquire(watch bool) (*lease.Hold, error) {
	opts := lease.AcquireOptions{Priority: 0, Wait: -1, Require: true} // -1: no bound but ctx
	var deadline time.Time
	if r.o.Wait > 0 {
		opts.Wait, deadline = r.o.Wait, time.Now().Add(r.o.Wait)
	}
	if !watch {
		return r.o.Engine.Acquire(r.ctx, Scope, Lane, opts)
	}
	// att is the Acquire in flight; nil when not queued.
	var att *attempt
	// withdraw ends the Acquire in flight and returns its Hold, if it won.
	withdraw := func() *lease.Hold {
		if att == nil {
			return nil
		}
		att.cancel()
		a := <-att.ch
		att = nil
		return a.h
	}
	defer func() {
		if h := withdraw(); h != nil {
			h.Release()
		}
	}()
	start := time.Now()
	var held bool
	var looked time.Time // last look at the lane, which costs several queries
	for {
		if time.Since(looked) >= laneLookEvery {
			held, looked = r.laneHeldElsewhere(), time.Now()
		}
		switch {
		case !held && att == nil:
			if !deadline.IsZero() {
				opts.Wait = max(time.Until(deadline), 0)
			}
			att = r.startAcquire(opts)
		case held && att != nil:
			if h := withdraw(); h != nil {
				return h, nil
			}
		}
		t := time.NewTimer(min(max(time.Since(start)/8, time.Millisecond), 250*time.Millisecond))
		var ch <-chan acquired // nil (never ready) when not queued
		if att != nil {
			ch = att.ch
		}
		select {
		case a := <-ch:
			t.Stop()
			att = nil
			return a.h, a.err
		case <-r.ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("cleolease/migrate: waiting for the cold-open lease: %w", r.ctx.Err())
		case <-t.C:
		}
		if current, err := r.current(); err != nil || current {
			return nil, err
		}
	}
}

// laneHeldElsewhere reports whether a live process other than this one
// holds the cold-open lane. Any doubt (an error reading the lease tables)
// answers false: the caller then simply queues for the lease.
func (r *runner) laneHeldElsewhere() bool {
	lanes, err := r.o.Engine.Status(r.ctx)
	if err != nil {
		return false
	}
	for _, l := range lanes {
		if l.Scope == Scope && l.Lane == Lane {
			return l.Holder != nil && l.Holder.Alive && l.Holder.ID != r.o.Engine.HolderID()
		}
	}
	return false
}

// current reports a clean database at or past the newest migration.
func (r *runner) current() (bool, error) {
	v, dirty, err := readVersion(r.ctx, r.db, r.o.Table)
	if err != nil {
		return false, err
	}
	if dirty || !r.upToDate(v) {
		return false, nil
	}
	r.warnAhead(v)
	return true, nil
}

func (r *runner) upToDate(v int) bool {
	return len(r.versions) == 0 || v >= int(r.versions[len(r.versions)-1])
}

func (r *runner) warnAhead(v int) {
	if len(r.versions) > 0 && v > int(r.versions[len(r.versions)-1]) && r.o.Logger != nil {
		r.o.Logger.Warn("cleolease: database is newer than every migration of this program",
			"version", v, "newest", r.versions[len(r.versions)-1])
	}
}

// state reads the version; a dirty database is an *Error.
func (r *runner) state() (Status, error) {
	v, dirty, err := readVersion(r.ctx, r.db, r.o.Table)
	if err != nil {
		return Status{}, err
	}
	if dirty {
		return Status{}, r.dirtyErr(v)
	}
	if err := r.ctx.Err(); err != nil {
		return Status{}, err
	}
	return Status{Version: v}, nil
}

// step runs one migration up (dir 1) or down (dir -1) with golang-migrate.
// One at a time, because golang-migrate's Up prefetches migrations in
// goroutines that block forever on a pipe once a migration fails.
func (r *runner) step(dir int) error {
	return r.convert(r.m.Steps(dir))
}

// convert turns golang-migrate's results into this package's.
func (r *runner) convert(err error) error {
	var me *Error
	var dirty migrate.ErrDirty
	switch {
	case err == nil, errors.Is(err, migrate.ErrNoChange):
		return nil
	case errors.As(err, &me):
		return me
	case errors.As(err, &dirty):
		return r.dirtyErr(dirty.Version)
	}
	return fmt.Errorf("cleolease/migrate: %s: %w", r.op, err)
}

func (r *runner) dirtyErr(v int) error {
	e := &Error{Op: r.op, Version: uint(max(v, 0)), Current: v, Dirty: true}
	if v >= 0 {
		e.Name = r.name(uint(v), true)
		if e.File = r.file(uint(v), true); e.File == "" {
			e.File = r.file(uint(v), false)
		}
	}
	return e
}

// file is the name of migration v's up (or down) file in the source, read
// from its listing: Options.FS, or the directory of a file:// SourceURL
// (golang-migrate's file driver's reading of the URL). "" for other
// sources, and when there is no such file.
func (r *runner) file(v uint, up bool) string {
	fsys := r.o.FS
	if fsys == nil {
		u, err := url.Parse(r.o.SourceURL)
		if err != nil || u.Scheme != "file" {
			return ""
		}
		dir := u.Opaque
		if dir == "" {
			dir = u.Host + u.Path
		}
		fsys = os.DirFS(dir)
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return ""
	}
	want := source.Up
	if !up {
		want = source.Down
	}
	for _, e := range ents {
		if m, err := source.Parse(e.Name()); err == nil && m.Version == v && m.Direction == want {
			return e.Name()
		}
	}
	return ""
}

// name is the identifier of migration v in the source ("" if unknown).
func (r *runner) name(v uint, up bool) string {
	read := r.src.ReadUp
	if !up {
		read = r.src.ReadDown
	}
	rc, id, err := read(v)
	if err != nil {
		if up {
			return r.name(v, false)
		}
		return ""
	}
	rc.Close()
	return id
}

func (r *runner) close() error {
	if r.hold != nil {
		r.hold.Release()
	}
	var errs []error
	if r.m != nil {
		// Closes the source and, through dbDriver.Close, the private
		// database.
		serr, derr := r.m.Close()
		errs = append(errs, serr, derr)
	} else {
		if r.src != nil {
			errs = append(errs, r.src.Close())
		}
		if r.db != nil {
			errs = append(errs, r.db.Close())
		}
	}
	return errors.Join(errs...)
}

// migrateLogger passes golang-migrate's log lines to slog at debug level.
type migrateLogger struct{ l *slog.Logger }

func (m migrateLogger) Printf(format string, v ...any) {
	m.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)))
}

func (m migrateLogger) Verbose() bool { return false }
