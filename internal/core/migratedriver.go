package core

import (
	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// migrateDriver is the go-sqlite3 driver package migrate opens its
// connections with, until migrate takes a sqlbase.Driver: the base's
// driver when it is go-sqlite3's, else nil (a plain one).
func migrateDriver(b sqlbase.Driver) *sqlite3.SQLiteDriver {
	if m, ok := b.(interface{ Driver() *sqlite3.SQLiteDriver }); ok {
		return m.Driver()
	}
	return nil
}
