package api

import (
	"context"
	"database/sql"
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
// db is a private *sql.DB of one connection on the base driver
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
