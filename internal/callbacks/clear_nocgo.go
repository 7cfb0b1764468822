//go:build !cgo

package callbacks

import "github.com/mattn/go-sqlite3"

// clearBuildTagged does nothing: without cgo go-sqlite3 opens no
// connection.
func clearBuildTagged(*sqlite3.SQLiteConn) error { return nil }
