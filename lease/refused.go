package lease

// A file that refuses writes. A LiteFS replica (its primary alone takes
// writes) opens read-write, reads, and refuses every write with EACCES,
// which SQLite reports as SQLITE_IOERR_WRITE ("disk I/O error: permission
// denied"); a file SQLite opened read-only refuses them with
// SQLITE_READONLY. The engine opens on such a file without its lease
// tables when they are missing (Open: they are then created by the first
// lease write, which is refused in turn), so that reads work and nothing
// is written at open.

import "github.com/cleocode/cleolease/internal/sqlbase"

// WriteRefused reports whether err (anywhere in its chain) is SQLite's
// report that the file refused a write: SQLITE_READONLY, or an
// SQLITE_IOERR whose system errno is EACCES, EPERM or EROFS, from any base
// (sqlbase.WriteRefused).
func WriteRefused(err error) bool { return sqlbase.WriteRefused(err) }
