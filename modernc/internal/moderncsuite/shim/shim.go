// Package shim is copied by internal/moderncsuite into the scratch package
// that runs modernc.org/sqlite's tests through cleolease (renamed there to
// sqlite_test): it holds the functions the rewritten tests call (suiteDSN,
// suiteRegister, suiteNewConnector, suiteRaw) and the few of modernc's
// unexported helpers the tests use that are simple enough to copy
// (origin, cloneBytes, defaultDriver). Nothing imports it.
package shim

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/modernc"
)

// suiteDSN returns dsn, except that a private database — ":memory:", a
// "file:" URI with an empty or ":memory:" path or mode=memory without
// cache=shared, or the empty DSN — becomes a new file in a directory of its
// own under os.TempDir() (which the runner points into its scratch
// directory and removes), keeping the DSN's parameters, so that the test
// runs through the writer lease rather than the private database's
// pass-through. The file is left for SQLite to create.
func suiteDSN(dsn string) string {
	path, query, _ := strings.Cut(dsn, "?")
	q, qerr := url.ParseQuery(query)
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
	switch {
	case qerr != nil:
		// A query that does not parse is kept as it is, for the driver
		// to refuse.
		return file + "?" + query
	case len(q) == 0:
		return file
	}
	return file + "?" + q.Encode()
}

// suiteRegister stands in for sql.Register: a modernc driver (with its
// connection hooks, functions, collations and modules) is registered as a
// cleolease driver using it as Config.BaseDriver; any other driver is
// registered as it is.
func suiteRegister(name string, d driver.Driver) {
	base, ok := d.(*sqlite.Driver)
	if !ok {
		sql.Register(name, d)
		return
	}
	sql.Register(name, &baseDriver{base: base})
}

// baseDriver opens cleolease connections whose Config.BaseDriver is base.
type baseDriver struct{ base *sqlite.Driver }

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
	cfg, err := modernc.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.BaseDriver = b.base
	return modernc.NewConnector(cfg)
}

// suiteNewConnector stands in for modernc's NewConnector(dsn): a cleolease
// connector for suiteDSN(dsn) over modernc's registered "sqlite" driver
// (Config.BaseDriver nil), which is what modernc's NewConnector uses.
func suiteNewConnector(dsn string) (driver.Connector, error) {
	cfg, err := modernc.ParseDSN(suiteDSN(dsn))
	if err != nil {
		return nil, err
	}
	return modernc.NewConnector(cfg)
}

// suiteRaw wraps a sql.Conn.Raw callback: a cleolease connection
// (modernc.Conn) is replaced by modernc's own (ModerncConn), what an
// application on cleolease-modernc reaches modernc's connection with.
func suiteRaw(f func(any) error) func(any) error {
	return func(dc any) error {
		if c, ok := dc.(modernc.Conn); ok {
			dc = c.ModerncConn()
		}
		return f(dc)
	}
}

// defaultDriver is modernc's unexported defaultDriver: the driver modernc
// registers as "sqlite".
func defaultDriver() *sqlite.Driver {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	return db.Driver().(*sqlite.Driver)
}

// origin is a copy of modernc's unexported origin (its test helpers trc
// and todo call it).
func origin(skip int) string {
	pc, fn, fl, _ := runtime.Caller(skip)
	f := runtime.FuncForPC(pc)
	var fns string
	if f != nil {
		fns = f.Name()
		if x := strings.LastIndex(fns, "."); x > 0 {
			fns = fns[x+1:]
		}
	}
	return fmt.Sprintf("%s:%d:%s", fn, fl, fns)
}

// cloneBytes is a copy of modernc's unexported cloneBytes.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
