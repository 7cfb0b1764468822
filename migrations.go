package cleolease

import (
	"io/fs"

	"github.com/cleocode/cleolease/internal/core"
	"github.com/cleocode/cleolease/writer"
)

// Migration errors, re-exported from package migrate. Test them with
// errors.Is; read the version, name and cause with errors.As into
// *MigrationError.
var (
	// ErrMigrationFailed: a cold-open migration did not apply. With the
	// default transaction wrapper the database is left at the previous
	// version, clean, and the next connect runs the migration again.
	ErrMigrationFailed = core.ErrMigrationFailed
	// ErrMigrationDirty: the database is dirty at a version (a migration
	// run with _migrations_no_tx_wrap, or by another tool, failed or was
	// interrupted). Nothing is forced: repair the schema by hand, then
	// force the version (migrate.Force).
	ErrMigrationDirty = core.ErrMigrationDirty
)

// MigrationError is the detailed form of a migration failure or a dirty
// database: the migration's version and name, the version the database is
// at, and the cause.
type MigrationError = core.MigrationError

// Migrator migrates a database with a tool of its own (ent's
// Schema.Create, goose's Up, atlas, hand-written DDL) at the cold open,
// under the cold-open lease: writer.Migrator.
type Migrator = writer.Migrator

// MigratorFunc adapts a function to a Migrator: writer.MigratorFunc.
type MigratorFunc = writer.MigratorFunc

// RegisterMigrations makes fsys the migration source called name, so that
// a DSN — including one handed to a DSN-only library such as GORM or sqlx —
// can select it with _migrations=name. fsys holds golang-migrate's iofs
// layout at its root (1_create_users.up.sql, 1_create_users.down.sql, ...);
// narrow an embed.FS with fs.Sub. Call it before the first connection,
// typically from init. Registering a name again replaces its source for
// later cold opens (a file already migrated in this process is not looked
// at again). It panics if name is empty, contains "://" (reserved for
// source URLs), contains a path separator or starts with '.' (reserved for
// directories, see migrate.IsDirPath), or fsys is nil. The registry is
// shared by every base's cleolease driver in the process.
func RegisterMigrations(name string, fsys fs.FS) { core.RegisterMigrations(name, fsys) }

// RegisterMigrator makes m reachable from a DSN as _migrations=name, so
// that DSN-only libraries (GORM, sqlx, a tool's own sql.Open) open the
// database migrated. A name may carry both a migrations fs.FS
// (RegisterMigrations) and a Migrator: the golang-migrate files run first,
// then the Migrator, each under the cold-open lease. Call it before the
// first connection, typically from init; registering a name again replaces
// its Migrator for later cold opens. It panics on the names
// RegisterMigrations refuses (empty, a source URL, a directory path) and on
// a nil Migrator.
func RegisterMigrator(name string, m Migrator) { core.RegisterMigrator(name, m) }
