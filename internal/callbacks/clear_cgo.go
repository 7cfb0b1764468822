//go:build cgo && !(sqlite_trace || trace)

package callbacks

import "github.com/mattn/go-sqlite3"

// clearBuildTagged clears the pre-update hook; go-sqlite3 was built
// without its trace API.
func clearBuildTagged(sc *sqlite3.SQLiteConn) error {
	sc.RegisterPreUpdateHook(nil) // does nothing without sqlite_preupdate_hook
	return nil
}
