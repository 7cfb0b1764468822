//go:build ((freebsd || openbsd || netbsd || dragonfly || illumos) && !sqlite3_dotlk) || (sqlite3_flock && !sqlite3_dotlk)

package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingFlock: ncruces's VFS locks the database with
// flock(2) on the BSDs and illumos, and everywhere when built with the tag
// sqlite3_flock (its vfs/os_bsd.go), compatible only with SQLite's
// unix-flock VFS.
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingFlock }

// walByDefault: cleolease defaults a writable file to WAL (Dialect.WithDefaults).
const walByDefault = true
