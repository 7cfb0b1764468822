// Package callbacks clears, on a go-sqlite3 connection the driver keeps
// for itself, the callbacks a base driver's ConnectHook registered for the
// application's statements.
package callbacks

import "github.com/mattn/go-sqlite3"

// Clear unregisters on sc every per-statement callback go-sqlite3 lets a
// ConnectHook register: the update, commit and rollback hooks, the
// authorizer, the pre-update hook (go-sqlite3's sqlite_preupdate_hook build
// tag) and the trace callback (its sqlite_trace or trace build tag). What
// the hook set for the file or for the connection's SQL stays: file
// controls such as SQLITE_FCNTL_PERSIST_WAL, limits, collations, functions,
// aggregators and extensions. The error is go-sqlite3's from clearing the
// trace callback (sqlite3_trace_v2); the other calls report none.
func Clear(sc *sqlite3.SQLiteConn) error {
	sc.RegisterUpdateHook(nil)
	sc.RegisterCommitHook(nil)
	sc.RegisterRollbackHook(nil)
	sc.RegisterAuthorizer(nil)
	return clearBuildTagged(sc)
}
