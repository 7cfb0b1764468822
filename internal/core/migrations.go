package core

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/migrate"
)

// Migration errors, re-exported from package migrate. Test them with
// errors.Is; read the version, name and cause with errors.As into
// *MigrationError.
var (
	// ErrMigrationFailed: a cold-open migration did not apply. With the
	// default transaction wrapper the database is left at the previous
	// version, clean, and the next connect runs the migration again.
	ErrMigrationFailed = migrate.ErrFailed
	// ErrMigrationDirty: the database is dirty at a version (a migration
	// run with _migrations_no_tx_wrap, or by another tool, failed or was
	// interrupted). Nothing is forced: repair the schema by hand, then
	// force the version (migrate.Force).
	ErrMigrationDirty = migrate.ErrDirty
)

// MigrationError is the detailed form of a migration failure or a dirty
// database: the migration's version and name, the version the database is
// at, and the cause.
type MigrationError = migrate.Error

var (
	migrationSourcesMu sync.RWMutex
	migrationSources   = map[string]fs.FS{}
)

// RegisterMigrations makes fsys the migration source called name, so that
// a DSN — including one handed to a DSN-only library such as GORM or sqlx —
// can select it with _migrations=name. fsys holds golang-migrate's iofs
// layout at its root (1_create_users.up.sql, 1_create_users.down.sql, ...);
// narrow an embed.FS with fs.Sub. Call it before the first connection,
// typically from init. Registering a name again replaces its source for
// later cold opens (a file already migrated in this process is not looked
// at again). It panics if name is empty, contains "://" (reserved for
// source URLs), contains a path separator or starts with '.' (reserved for
// directories, see migrate.IsDirPath), or fsys is nil.
func RegisterMigrations(name string, fsys fs.FS) {
	checkRegisteredName("RegisterMigrations", name)
	if fsys == nil {
		panic("cleolease: RegisterMigrations: nil fs.FS for " + name)
	}
	migrationSourcesMu.Lock()
	migrationSources[name] = fsys
	migrationSourcesMu.Unlock()
}

// migrationSource returns the configured source: Config.MigrationsFS when
// set, else _migrations as a golang-migrate source URL when it holds
// "://", as a directory when migrate.IsDirPath says so (a path separator
// or a leading '.'; relative to the working directory), else the fs.FS
// registered under that name. ok is false when no migrations are
// configured.
func (c *Connector) migrationSource() (url string, fsys fs.FS, ok bool, err error) {
	if c.cfg.MigrationsFS != nil {
		return "", c.cfg.MigrationsFS, true, nil
	}
	name := c.cfg.Migrations
	if name == "" {
		return "", nil, false, nil
	}
	if migrate.IsDirPath(name) {
		st, err := os.Stat(name)
		switch {
		case err != nil:
			return "", nil, false, fmt.Errorf("cleolease: _migrations=%q (a directory, since it has a path separator or starts with '.'): %w", name, err)
		case !st.IsDir():
			return "", nil, false, fmt.Errorf("cleolease: _migrations=%q (a directory, since it has a path separator or starts with '.'): not a directory", name)
		}
		return "", os.DirFS(name), true, nil
	}
	migrationSourcesMu.RLock()
	fsys = migrationSources[name]
	migrationSourcesMu.RUnlock()
	if fsys != nil {
		return "", fsys, true, nil
	}
	if strings.Contains(name, "://") {
		return name, nil, true, nil
	}
	if registeredMigrator(name) {
		return "", nil, false, nil // a Migrator only (migratehook.go)
	}
	return "", nil, false, fmt.Errorf("cleolease: _migrations=%q is neither a name given to RegisterMigrations or RegisterMigrator nor a source URL such as file://dir (a directory path needs a path separator or a leading '.': ./%s)", name, name)
}

// coldState is the cold open of one database (file identity plus version
// table) in this process.
type coldState struct {
	mu   sync.Mutex
	done bool          // migrations ran to the end ...
	eng  *lease.Engine // ... under this engine (nil in mode off)
	run  *coldRun      // the run waiters join, if any
	last *coldRun      // the run started last (it may be cancelled and still finishing)
}

// coldRun is one migration run, shared by the connects waiting for it.
type coldRun struct {
	done    chan struct{}
	err     error
	waiters int
	cancel  context.CancelFunc
}

var coldStates sync.Map // key string → *coldState

// coldOpen brings the database up to the newest migration, then runs the
// Migrator if one is configured (migratehook.go), before the connection
// Connect just opened is handed out.
//
// The first connect to a file in this process runs migrate.Up — the cold
// open — on a private raw go-sqlite3 connection, under the lease of the
// lane ("cleolease", "migrate") unless the mode is off. Concurrent connects
// wait for that run, each until its own context ends (the run itself is
// cancelled only when every waiter has gone); later connects skip it. A
// failed run is not remembered: its error (a *MigrationError naming the
// migration, a *LeaseError, or the context's error) is returned from this
// connect, so from Ping or the first query, and the next connect tries
// again.
//
// The state is kept per file (resolved path, device, inode) and version
// table, so connectors sharing a file share one run. It stays valid while
// the lease engine it ran under is open; when every connector of the file
// has been closed, the next one checks the version again (one read, no
// lease). A shared in-memory database is checked on every connect (it
// vanishes with its last connection) and migrated in-process only.
//
// Read-only opens (mode=ro, immutable=1, or a file SQLite opened read-only)
// never get here (Connect, warnPendingReadOnly): they see the schema as it
// is, pending migrations are logged, and a query against a table a pending
// migration would create fails with SQLite's own error. Open the file
// writable once, or run the migrations with package migrate, before
// serving read-only connections.
func (c *Connector) coldOpen(ctx context.Context) error {
	if c.readOnly {
		return nil
	}
	url, fsys, ok, err := c.migrationSource()
	mig := c.migrator()
	if err != nil || (!ok && mig == nil) {
		return err
	}
	key, err := c.coldKey()
	if err != nil {
		return err
	}
	v, _ := coldStates.LoadOrStore(key, &coldState{})
	st := v.(*coldState)
	eng := c.Engine()

	st.mu.Lock()
	if st.done && st.eng == eng && !c.memory {
		st.mu.Unlock()
		return nil
	}
	r := st.run
	if r == nil {
		rctx, cancel := context.WithCancel(context.Background())
		r = &coldRun{done: make(chan struct{}), cancel: cancel}
		prev := st.last
		st.run, st.last = r, r
		leaseEng := eng
		if c.memory {
			// In-process only: the single flight above is the lock.
			leaseEng = nil
		}
		opts := migrate.Options{
			DSN:       c.dsn,
			Base:      c.drvBase,
			SourceURL: url,
			FS:        fsys,
			Table:     c.cfg.MigrationsTable,
			NoTxWrap:  c.cfg.MigrationsNoTxWrap,
			Engine:    leaseEng,
			Logger:    c.log,
		}
		go func() {
			if prev != nil {
				<-prev.done // a cancelled run winding down
			}
			var err error
			if ok {
				err = migrate.Up(rctx, opts)
			}
			if err == nil && mig != nil {
				err = migrate.Run(rctx, opts, mig.Migrate)
			}
			if err != nil {
				err = c.migrationsOnReplica(rctx, err, opts, ok)
			}
			cancel()
			st.mu.Lock()
			if st.run == r {
				st.run = nil
			}
			if err == nil {
				st.done, st.eng = true, eng
			}
			r.err = err
			st.mu.Unlock()
			close(r.done)
		}()
	}
	r.waiters++
	st.mu.Unlock()

	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		st.mu.Lock()
		r.waiters--
		if r.waiters == 0 && st.run == r {
			// Nobody waits any more: stop the run (a migration in flight
			// rolls back) and let the next connect start afresh.
			r.cancel()
			st.run = nil
		}
		st.mu.Unlock()
		return fmt.Errorf("cleolease: waiting for the cold-open migrations of %s: %w", c.path, ctx.Err())
	}
}

// coldKey identifies the database and version table a cold open is for.
func (c *Connector) coldKey() (string, error) {
	table := c.cfg.MigrationsTable
	if c.migrator() != nil {
		table += "\x00migrator" // a connector with a Migrator does not skip it after one without
	}
	if c.memory {
		return "mem:" + c.path + "\x00" + table, nil
	}
	resolved, dev, ino, err := lease.FileKey(c.path)
	if err != nil {
		return "", fmt.Errorf("cleolease: cold open of %s: %w", c.path, err)
	}
	return fmt.Sprintf("%s\x00%d:%d\x00%s", resolved, dev, ino, table), nil
}

// checkRegisteredName panics, naming fn, on a name _migrations could not
// reach as a registered name: empty, a source URL ("://"), or a directory
// path (migrate.IsDirPath).
func checkRegisteredName(fn, name string) {
	switch {
	case name == "":
		panic("cleolease: " + fn + ": empty name")
	case strings.Contains(name, "://"):
		panic("cleolease: " + fn + ": name " + name + " looks like a source URL")
	case migrate.IsDirPath(name):
		panic("cleolease: " + fn + ": name " + name + " looks like a directory (it has a path separator or starts with '.')")
	}
}
