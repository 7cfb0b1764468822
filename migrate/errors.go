package migrate

import (
	"errors"
	"fmt"
)

// Sentinels matched, with errors.Is, by every *Error.
var (
	// ErrFailed: a migration did not apply. Error.Err holds the cause.
	ErrFailed = errors.New("migration failed")
	// ErrDirty: the database is dirty at Error.Version — a migration run
	// without the transaction wrapper (NoTxWrap), or by another tool,
	// failed or was interrupted. Repair the schema by hand, then Force the
	// version it is now at.
	ErrDirty = errors.New("database is dirty")
)

// Error describes a migration that failed or a dirty database. errors.Is
// matches it against ErrFailed when Err is set (a migration failed),
// against ErrDirty when Dirty is (the database is dirty now: found so, or
// left so by a NoTxWrap migration that failed), and against everything Err
// matches; errors.As reaches Err's types (an sqlite3.Error, a
// *lease.Error...).
type Error struct {
	// Op is the operation: "up", "steps", "goto", "force".
	Op string
	// Version is the migration concerned: the one that failed (for a
	// down migration, the version it reverts), or the dirty version.
	Version uint
	// Name is the migration's identifier in the source ("create_users"),
	// when known.
	Name string
	// File is the migration's file name in the source
	// ("0003_create_users.up.sql"), when the source is an FS or a file://
	// directory; empty otherwise.
	File string
	// Down reports a down migration.
	Down bool
	// Current is the version the database is at now (NilVersion for none).
	Current int
	// Dirty reports that the database is dirty at Current.
	Dirty bool
	// Err is the cause; nil for a database found dirty.
	Err error
}

func (e *Error) Error() string {
	name := ""
	switch {
	case e.File != "":
		name = " (" + e.File + ")"
	case e.Name != "":
		name = " (" + e.Name + ")"
	}
	if e.Err == nil {
		return fmt.Sprintf("cleolease/migrate: %s: database is dirty at version %d%s: a migration run without the transaction wrapper, or by another tool, failed or was interrupted; repair the schema by hand, then force the version",
			e.Op, e.Current, name)
	}
	dir := " up" // the file name, when known, says it
	if e.Down {
		dir = " down"
	}
	if e.File != "" {
		dir = ""
	}
	left := fmt.Sprintf("database left at version %d, clean", e.Current)
	switch {
	case e.Current == NilVersion && !e.Dirty:
		left = "database left with no version applied, clean"
	case e.Dirty:
		left = fmt.Sprintf("database left dirty at version %d: repair the schema by hand, then force the version", e.Current)
	}
	return fmt.Sprintf("cleolease/migrate: migration %d%s%s failed: %v; %s", e.Version, name, dir, e.Err, left)
}

// Unwrap returns the sentinels that apply (ErrFailed, ErrDirty) and the
// cause.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, ErrFailed, e.Err)
	}
	if e.Dirty {
		out = append(out, ErrDirty)
	}
	return out
}
