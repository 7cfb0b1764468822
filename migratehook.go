package cleolease

import (
	"context"
	"database/sql"
	"sync"
)

// Migrator migrates a database with a tool of its own — ent's
// Schema.Create, goose's Up, atlas, hand-written DDL — where golang-migrate
// files (Config.MigrationsFS, _migrations) do not fit. Set it as
// Config.Migrator, or register it with RegisterMigrator to reach it from a
// DSN.
//
// The first time a process opens a writable database file (its cold open),
// Migrate runs under the cold-open lease, after the golang-migrate
// migrations if there are any: processes opening the file at once run it
// one at a time, each waiting for the lease until the one before has
// finished, and the connect that triggered it returns only afterwards.
// Each run sees the database as the run before left it, so a tool that
// reads the schema or its version table before changing anything (ent,
// goose, atlas; DDL guarded by IF NOT EXISTS or PRAGMA user_version)
// applies each change exactly once across processes. Concurrent first
// connects in one process share one run; later connects skip it. An error
// (matching ErrMigrationFailed, with errors.As reaching the Migrator's own
// error) comes back from that connect, so from Ping or the first query, and
// is not remembered: the next connect runs the Migrator again.
//
// db is a private *sql.DB of one connection on the raw go-sqlite3 driver
// (Config.BaseDriver, the Config's SQLite DSN with cleolease's defaults),
// valid only during the call — never the caller's pool, which is still
// opening its first connection and would deadlock. It takes no writer
// lease: the cold-open lease already keeps every other process's
// migrations out. Because the connection is single, Migrate must not hold
// a *sql.Rows open while it runs another statement on db outside that
// transaction. With _lease_mode=off it runs without the lease; read-only
// opens (mode=ro, immutable=1, a file SQLite can only open read-only)
// never run it.
type Migrator interface {
	Migrate(ctx context.Context, db *sql.DB) error
}

// MigratorFunc adapts a function to a Migrator.
type MigratorFunc func(ctx context.Context, db *sql.DB) error

// Migrate calls f(ctx, db).
func (f MigratorFunc) Migrate(ctx context.Context, db *sql.DB) error { return f(ctx, db) }

var (
	migratorsMu sync.RWMutex
	migrators   = map[string]Migrator{}
)

// RegisterMigrator makes m reachable from a DSN as _migrations=name, so
// that DSN-only libraries (GORM, sqlx, a tool's own sql.Open) open the
// database migrated. A name may carry both a migrations fs.FS
// (RegisterMigrations) and a Migrator: the golang-migrate files run first,
// then the Migrator, each under the cold-open lease. Call it before the
// first connection, typically from init; registering a name again replaces
// its Migrator for later cold opens. It panics on the names
// RegisterMigrations refuses (empty, a source URL, a directory path) and on
// a nil Migrator.
func RegisterMigrator(name string, m Migrator) {
	checkRegisteredName("RegisterMigrator", name)
	if m == nil {
		panic("cleolease: RegisterMigrator: nil Migrator for " + name)
	}
	migratorsMu.Lock()
	migrators[name] = m
	migratorsMu.Unlock()
}

// migrator returns the Migrator to run at the cold open: Config.Migrator
// when set, else the one registered under _migrations, else nil.
func (c *Connector) migrator() Migrator {
	if c.cfg.Migrator != nil {
		return c.cfg.Migrator
	}
	if c.cfg.Migrations == "" {
		return nil
	}
	migratorsMu.RLock()
	defer migratorsMu.RUnlock()
	return migrators[c.cfg.Migrations]
}

// registeredMigrator reports whether name was given to RegisterMigrator.
func registeredMigrator(name string) bool {
	migratorsMu.RLock()
	defer migratorsMu.RUnlock()
	return migrators[name] != nil
}
