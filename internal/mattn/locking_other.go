//go:build !windows

package mattn

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingPOSIX: go-sqlite3's SQLite takes POSIX fcntl
// record locks on the database (SQLite's unix VFS).
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingPOSIX }
