package modernc

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io/fs"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/core"
	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/modernc/internal/base"
	"github.com/cleocode/cleolease/writer"
)

// DriverName is the name the package registers its driver under.
const DriverName = "cleolease-modernc"

func init() {
	sql.Register(DriverName, &Driver{})
	leasectx.RegisterFinder(func(d driver.Driver) (leasectx.Connector, bool) {
		if dd, ok := d.(*Driver); ok && dd.c != nil {
			return dd.c.c.Shared(), true
		}
		return nil, false
	})
}

// Driver is the cleolease driver over modernc. The registered instance
// serves sql.Open; each Connector reports its own instance from Driver(),
// which package writer uses to find the lease engine behind a *sql.DB.
type Driver struct {
	c *Connector
}

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.DriverContext = (*Driver)(nil)
)

// Open opens one connection; database/sql uses OpenConnector instead. The
// connection owns its connector and closes it when closed.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := c.Connect(context.Background())
	if err != nil {
		c.(*Connector).Close()
		return nil, err
	}
	conn.(*outerConn).OwnConnector()
	return conn, nil
}

// OpenConnector parses and validates dsn (ParseDSN's errors) and does no
// I/O.
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

// Connector opens cleolease connections over modernc for one Config. It
// owns the lease engine of its file (shared with the other connectors on
// the file in this process) and releases it in Close, which database/sql
// calls from DB.Close.
type Connector struct {
	c    *core.Connector
	base *sqlite.Driver // Config.BaseDriver as given (nil kept)
	drv  *Driver
}

var _ driver.Connector = (*Connector)(nil)

// NewConnector validates cfg as ParseDSN validates a DSN (a
// *writer.DSNError, a *writer.ConfigError naming a bad field or a nil cfg,
// writer.ErrPrivateMemory) and returns a Connector for sql.OpenDB. cfg is
// copied.
func NewConnector(cfg *Config) (*Connector, error) {
	if cfg == nil {
		return nil, &writer.ConfigError{Reason: "nil *Config (use NewConfig or ParseDSN)"}
	}
	conn := &Connector{base: cfg.BaseDriver}
	conn.drv = &Driver{c: conn}
	c, err := core.NewConnector(api.Rebase[*sqlite.Driver, sqlbase.Driver](cfg, base.For(cfg.BaseDriver)), dialect, conn.drv)
	if err != nil {
		return nil, err
	}
	conn.c = c
	return conn, nil
}

// OpenDB returns a *sql.DB over NewConnector(cfg), with its errors. It does
// no I/O: the first connect happens at Ping or the first query.
func OpenDB(cfg *Config) (*sql.DB, error) {
	c, err := NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// Config returns a copy of the connector's configuration, its defaults
// applied.
func (c *Connector) Config() *Config { return api.Rebase(c.c.Config(), c.base) }

// Driver returns this connector's driver.
func (c *Connector) Driver() driver.Driver { return c.drv }

// Connect opens a connection; the first connect to a file in this process
// also opens its lease engine and runs the configured migrations under the
// cold-open lease. Errors: a *writer.NetworkFSError, writer.ErrFileChanged,
// a migration's *writer.MigrationError, and modernc's own error, unwrapped,
// when the file cannot be opened or is not a database.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &outerConn{conn.(*core.OuterConn)}, nil
}

// Engine returns the connector's lease engine, or nil before the first
// connection and when writes take no lease.
func (c *Connector) Engine() *lease.Engine { return c.c.Engine() }

// Close releases the connector's share of the lease engine (handing over
// any lane this process still holds). Safe to call twice.
func (c *Connector) Close() error { return c.c.Close() }

// Conn is implemented by the value sql.Conn.Raw passes to its callback:
// ModerncConn returns modernc's own connection (its FileControl, Serialize,
// NewBackup, …, by type assertion to the interfaces modernc documents).
// Statements run directly on it bypass the writer lease and the fencing
// check.
type Conn interface {
	driver.Conn
	ModerncConn() driver.Conn
}

// outerConn is the core's outer connection with modernc's reachable.
type outerConn struct{ *core.OuterConn }

var _ Conn = (*outerConn)(nil)

// ModerncConn returns modernc's connection.
func (c *outerConn) ModerncConn() driver.Conn { return c.Base() }

// Unwrap returns modernc's connection, as ModerncConn does: modernc's
// helpers that look through a wrapping connection (sqlite.Limit) find it.
func (c *outerConn) Unwrap() driver.Conn { return c.Base() }

// RegisterMigrations makes fsys the migration source called name for the
// DSN's _migrations=name (golang-migrate's iofs layout at its root); see
// package cleolease's RegisterMigrations: the registry is shared by every
// base's driver in the process. It panics on a bad name or a nil fsys.
func RegisterMigrations(name string, fsys fs.FS) { core.RegisterMigrations(name, fsys) }

// RegisterMigrator makes m reachable from a DSN as _migrations=name; see
// package cleolease's RegisterMigrator. It panics on a bad name or a nil m.
func RegisterMigrator(name string, m writer.Migrator) { core.RegisterMigrator(name, m) }
