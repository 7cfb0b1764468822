package api

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// ValidTableName reports whether s is a plain SQL identifier,
// [A-Za-z_][A-Za-z0-9_]*: the names accepted for the migrations' version
// table.
func ValidTableName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// IsLeaseKey reports whether a DSN parameter name is in the namespace that
// cleolease owns: "_lease_…" or "_migrations…".
func IsLeaseKey(key string) bool {
	return strings.HasPrefix(key, "_lease_") || strings.HasPrefix(key, "_migrations")
}

// checkOwnParams refuses cleolease's own parameters inside SQLiteDSN (set
// in a Config literal): the base would ignore them.
func checkOwnParams(dsn string) error {
	_, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return nil
	}
	for _, tok := range strings.Split(query, "&") {
		rawKey, _, _ := strings.Cut(tok, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			continue // the dialect reports it
		}
		if IsLeaseKey(key) {
			return &DSNError{Param: key, Reason: "a cleolease parameter in Config.SQLiteDSN; set the Config field instead"}
		}
	}
	return nil
}

// dsnError turns a dialect's *sqlbase.ParamError into a *DSNError; any
// other error is returned as it is.
func dsnError(err error) error {
	var pe *sqlbase.ParamError
	if errors.As(err, &pe) {
		return &DSNError{Param: pe.Param, Value: pe.Value, Reason: pe.Reason}
	}
	return err
}

// checkPrivate checks a Config whose DSN opens a private database: one in
// memory (":memory:", mode=memory without cache=shared, a memdb name not
// starting with '/') or the temporary on-disk database SQLite opens for an
// empty file name (the empty DSN included). No other process can reach
// such a database, so there is nothing to lease and it opens exactly as
// with the base alone; but migrations (_migrations, Config.MigrationsFS,
// Config.Migrator) would land on the migrations' own connection, a
// database nobody else sees, and are refused with an error matching
// ErrPrivateMemory.
func checkPrivate[D any](c *Config[D], d sqlbase.Dialect) error {
	dsn := c.SQLiteDSN
	if dsn == "" {
		return checkPrivateMigrations(c, "the DSN is empty: SQLite opens a private temporary on-disk database")
	}
	pathPart, _, _ := strings.Cut(dsn, "?")
	t, err := d.Target(dsn)
	if err != nil {
		return dsnError(err)
	}
	switch {
	case t.Path == "":
		return checkPrivateMigrations(c, fmt.Sprintf("DSN %q has an empty path: SQLite opens a private temporary database", pathPart))
	case t.Private():
		return checkPrivateMigrations(c, fmt.Sprintf("DSN path %q", pathPart))
	}
	return nil
}

// checkPrivateMigrations refuses migrations on a private database, saying
// which (what).
func checkPrivateMigrations[D any](c *Config[D], what string) error {
	if c.Migrations == "" && c.MigrationsFS == nil && c.Migrator == nil {
		return nil
	}
	return fmt.Errorf("%w (%s; its migrations would run on a connection of their own, which no other connection sees)", ErrPrivateMemory, what)
}

// lockless are the VFSes that take no file locks (unix-none, win32-none)
// or keep them for the connection's life (unix-excl).
var lockless = map[string]string{
	"unix-none":  "takes no file locks",
	"win32-none": "takes no file locks",
	"unix-excl":  "keeps an exclusive lock on the file for the connection's life",
}

// checkLockable refuses the DSN settings under which no lease can work
// across processes: exclusive locking mode (SQLite keeps its locks after
// each transaction, so other processes stall), nolock=1 and the lockless
// VFSes (nothing keeps two processes' writes apart). _lease_mode=off
// allows them.
func checkLockable(dsn string, d sqlbase.Dialect) error {
	t, err := d.Target(dsn)
	if err != nil {
		return nil // checkPrivate reported what it could
	}
	const off = "; the writer lease needs SQLite's file locks across processes (_lease_mode=off allows it)"
	switch {
	case t.Locking == "EXCLUSIVE":
		return &DSNError{Param: t.LockingParam, Value: "EXCLUSIVE", Reason: "exclusive locking mode keeps SQLite's locks after each transaction and stalls every other process" + off}
	case t.NoLock:
		return &DSNError{Param: "nolock", Value: "1", Reason: "SQLite takes no file locks" + off}
	case lockless[t.VFS] != "":
		return &DSNError{Param: "vfs", Value: t.VFS, Reason: "this VFS " + lockless[t.VFS] + off}
	}
	return nil
}
