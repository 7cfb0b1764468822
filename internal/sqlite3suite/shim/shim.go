// Package shim is copied by internal/sqlite3suite into the scratch package
// that runs go-sqlite3's tests through cleolease (renamed there to
// sqlite3_test): it holds the two functions the rewritten tests call,
// suiteDSN and suiteRegister. Nothing imports it.
package shim

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/cleocode/cleolease"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// suiteDSN returns dsn, except that a private database — ":memory:", a
// "file:" URI with an empty or ":memory:" path or mode=memory without
// cache=shared, or the empty DSN — becomes a new file in a directory of its
// own under os.TempDir() (which the runner points into its scratch
// directory and removes), keeping the DSN's parameters. The file is left
// for SQLite to create.
func suiteDSN(dsn string) string {
	path, query, _ := strings.Cut(dsn, "?")
	q, _ := url.ParseQuery(query)
	uri := strings.HasPrefix(path, "file:")
	switch {
	case dsn == "":
	case path == ":memory:":
	case uri && q.Get("cache") == "shared":
		return dsn
	case uri && (path == "file::memory:" || path == "file:" || q.Get("mode") == "memory"):
		q.Del("mode")
	default:
		return dsn
	}
	dir, err := os.MkdirTemp("", "private-")
	if err != nil {
		panic(err)
	}
	file := filepath.Join(dir, "db.sqlite")
	if uri {
		file = "file:" + file
	}
	if len(q) == 0 {
		return file
	}
	return file + "?" + q.Encode()
}

// suiteRegister stands in for sql.Register: a go-sqlite3 driver (with its
// ConnectHook, extensions and functions) is registered as a cleolease
// driver using it as Config.BaseDriver; any other driver is registered as
// it is.
func suiteRegister(name string, d driver.Driver) {
	base, ok := d.(*sqlite3.SQLiteDriver)
	if !ok {
		sql.Register(name, d)
		return
	}
	sql.Register(name, &baseDriver{base: base})
}

// baseDriver opens cleolease connections whose Config.BaseDriver is base.
type baseDriver struct{ base *sqlite3.SQLiteDriver }

// Open serves callers that bypass OpenConnector; database/sql does not.
// The connector stays open with the connection (a test's leak only).
func (b *baseDriver) Open(dsn string) (driver.Conn, error) {
	c, err := b.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector builds a cleolease connector from dsn with base as the
// Config.BaseDriver.
func (b *baseDriver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := cleolease.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.BaseDriver = b.base
	c, err := cleolease.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}
