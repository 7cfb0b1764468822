//go:build windows && !sqlite3_flock && !sqlite3_dotlk

package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingWin32: ncruces's VFS takes LockFileEx locks on
// Windows (its vfs/os_windows.go), as SQLite's win32 VFS does.
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingWin32 }

// walByDefault: cleolease defaults a writable file to WAL (Dialect.WithDefaults).
const walByDefault = true
