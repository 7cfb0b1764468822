package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingWin32: modernc.org/sqlite takes LockFileEx
// locks on the database (SQLite's win32 VFS, translated to Go).
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingWin32 }
