//go:build (linux || darwin) && !(sqlite3_flock || sqlite3_dotlk)

package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingOFD: ncruces's VFS locks the database with
// open-file-description locks on Linux and macOS (its vfs/os_ofd.go), which
// conflict with the POSIX record locks of C SQLite's unix VFS: its README
// calls this default compatible with SQLite's standard VFSes.
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingOFD }

// walByDefault: cleolease defaults a writable file to WAL (Dialect.WithDefaults).
const walByDefault = true
