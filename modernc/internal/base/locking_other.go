//go:build !windows

package base

import "github.com/cleocode/cleolease/internal/sqlbase"

// Locking is sqlbase.LockingPOSIX: modernc.org/sqlite takes POSIX fcntl
// record locks on the database (SQLite's unix VFS, translated to Go), as
// C SQLite does.
func (b *Base) Locking() sqlbase.Locking { return sqlbase.LockingPOSIX }
