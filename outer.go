package cleolease

// The outer connection: what database/sql holds and hands to sql.Conn.Raw.

import (
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/core"
)

// Conn is implemented by the value sql.Conn.Raw passes to its callback:
//
//	conn, err := db.Conn(ctx)
//	if err != nil {
//		return err
//	}
//	defer conn.Close()
//	err = conn.Raw(func(dc any) error {
//		sc := dc.(cleolease.Conn).SQLiteConn()
//		return sc.RegisterFunc("twice", func(x int) int { return 2 * x }, true)
//	})
//
// Statements run directly on the *sqlite3.SQLiteConn bypass the writer
// lease and the fencing check.
type Conn interface {
	driver.Conn
	SQLiteConn() *sqlite3.SQLiteConn
}

// outerConn is the core's outer connection (every optional interface
// database/sql uses, forwarded) with go-sqlite3's connection reachable.
type outerConn struct{ *core.OuterConn }

var _ Conn = (*outerConn)(nil)

// SQLiteConn returns the native go-sqlite3 connection.
func (c *outerConn) SQLiteConn() *sqlite3.SQLiteConn { return c.Base().(*sqlite3.SQLiteConn) }
