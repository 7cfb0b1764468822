//go:build !(linux || darwin || windows || freebsd || openbsd || netbsd || dragonfly || illumos || sqlite3_flock || sqlite3_dotlk)

package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingNone: on this OS ncruces's VFS takes no file
// locks (its vfs/lock_other.go; databases must be opened with nolock=1),
// so it shares a file with no other process safely.
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingNone }

// walByDefault: cleolease defaults a writable file to WAL (Dialect.WithDefaults).
const walByDefault = true
