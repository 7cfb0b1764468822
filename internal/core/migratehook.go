package core

import "sync"

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
