package mattn

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingWin32: go-sqlite3's SQLite takes LockFileEx locks
// on the database (SQLite's win32 VFS).
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingWin32 }
