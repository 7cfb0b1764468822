//go:build sqlite3_dotlk

package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingDotlk: built with the tag sqlite3_dotlk,
// ncruces's VFS locks the database with a lock file beside it (its
// vfs/os_dotlk.go), compatible only with SQLite's unix-dotfile VFS.
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingDotlk }

// walByDefault is false: ncruces shares the WAL index of a dotlk build
// within one process only (its vfs/shm_dotlk.go), so cleolease leaves a
// file in its journal mode (Dialect.WithDefaults).
const walByDefault = false
