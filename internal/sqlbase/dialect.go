package sqlbase

import "fmt"

// Target is what a DSN makes a base and SQLite open.
type Target struct {
	// Path is the file name as SQLite sees it (URI decoded), not resolved;
	// "" for the temporary database an empty name opens.
	Path string
	// Memory: an in-memory database (":memory:", mode=memory, vfs=memdb).
	Memory bool
	// Shared: reachable by every connection of the process under Path
	// (cache=shared, a memdb name starting with '/').
	Shared bool
	// ReadOnly: the DSN opens read-only (mode=ro, immutable=1, or the
	// base's query-only setting).
	ReadOnly bool
	// VFS is the VFS the DSN names, "" for the default.
	VFS string
	// NoLock: nolock=1 in a file: URI.
	NoLock bool
	// Locking is the locking mode the DSN sets, upper-cased ("EXCLUSIVE"),
	// and LockingParam the parameter that sets it, for errors.
	Locking, LockingParam string
}

// Private reports a database that only the connection opening it can
// reach: a temporary one (empty path) or an in-memory one not shared.
func (t Target) Private() bool { return t.Path == "" || (t.Memory && !t.Shared) }

// ParamError reports a DSN parameter a base's dialect rejects: Param names
// it, Value is its value (empty when the name itself is the problem, and
// never a secret's), Reason says why.
type ParamError struct {
	Param, Value, Reason string
}

func (e *ParamError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("DSN parameter %q: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("DSN parameter %q has bad value %q: %s", e.Param, e.Value, e.Reason)
}

// Dialect is a base's own DSN language, as cleolease reads and extends it.
// cleolease's own parameters (_lease_*, _migrations*) are removed before
// any of these methods sees a DSN.
type Dialect interface {
	// Check validates dsn's parameters: one the base would reject, or
	// silently ignore (an underscore parameter it does not read: a
	// probable typo), or a path the base would misread, is a *ParamError
	// naming it; a query the base cannot parse at all is another error.
	Check(dsn string) error
	// Target reports what dsn opens; a DSN SQLite would refuse yields the
	// best guess and the error.
	Target(dsn string) (Target, error)
	// WithDefaults returns dsn followed by cleolease's default settings
	// that dsn does not set itself under any of the base's names for them:
	// busy_timeout 30000 ms, synchronous NORMAL, foreign_keys ON, and, when
	// onDisk and dsn opens a writable file, journal_mode WAL. The caller's
	// bytes are kept; an empty DSN comes back unchanged.
	WithDefaults(dsn string, onDisk bool) string
	// JournalMode returns the journal mode dsn sets, upper-cased, or "".
	JournalMode(dsn string) string
}
