package cleolease

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/core"
	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// driverName is the name init registers the driver under. It is a variable
// (as in go-sqlite3 and go-sql-driver/mysql) so that a build can change it
// with -ldflags "-X github.com/cleocode/cleolease.driverName=..."; an empty
// name skips registration.
var driverName = "cleolease"

func init() {
	if driverName != "" {
		sql.Register(driverName, &Driver{})
	}
	// Package writer finds this package's connectors behind a *sql.DB.
	leasectx.RegisterFinder(func(d driver.Driver) (leasectx.Connector, bool) {
		if dd, ok := d.(*Driver); ok && dd.c != nil {
			return dd.c.c.Shared(), true
		}
		return nil, false
	})
}

// Driver is the cleolease database/sql driver. The registered instance
// serves sql.Open; each Connector reports its own instance from Driver(),
// which the package's helpers (AcquireLease, Stats, Status) use to find the
// lease engine behind a *sql.DB.
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

// OpenConnector parses and validates dsn and does no I/O, so sql.Open fails
// at once on a bad DSN (a *DSNError, or ErrPrivateMemory for migrations on
// a private database) and tools that probe a driver by opening it are not
// disturbed.
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

// Connector opens cleolease connections for one Config. It owns the lease
// engine of its file (shared with other connectors on the same file in
// this process) and releases it in Close, which database/sql calls from
// DB.Close.
type Connector struct {
	c    *core.Connector
	base *sqlite3.SQLiteDriver // Config.BaseDriver as given (nil kept)
	drv  *Driver
}

var _ driver.Connector = (*Connector)(nil)

// NewConnector validates cfg exactly as ParseDSN validates a DSN (errors:
// *DSNError, ErrPrivateMemory for migrations on a private database, a
// *ConfigError naming a bad field, or one for a nil cfg) and returns a
// Connector for sql.OpenDB. cfg is copied: a later change to it does not
// reach the Connector. cfg may come from NewConfig or ParseDSN (every field
// explicit, zeros kept) or be a literal (&Config{...}: a field left at its
// zero value takes its default).
func NewConnector(cfg *Config) (*Connector, error) {
	if cfg == nil {
		return nil, &ConfigError{Reason: "nil *Config (use NewConfig or ParseDSN)"}
	}
	conn := &Connector{base: cfg.BaseDriver}
	conn.drv = &Driver{c: conn}
	c, err := core.NewConnector(api.Rebase[*sqlite3.SQLiteDriver, sqlbase.Driver](cfg, mattn.For(cfg.BaseDriver)), dialect, conn.drv)
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

// Driver returns this connector's cleolease driver.
func (c *Connector) Driver() driver.Driver { return c.drv }

// Connect opens a connection. The first connect to a file in this process
// also opens the file's lease engine (creating the lease tables, except on
// a file that refuses writes, such as a LiteFS replica); a private
// database gets none and is opened exactly as go-sqlite3 opens it, and so
// does a file SQLite opened read-only: such a connection takes no lease,
// runs no migrations and creates nothing. Errors: a *NetworkFSError
// (before anything is opened or created) when the database's directory is
// on a network filesystem and Config.NetworkFS does not allow it,
// ErrFileChanged when the path now names another file than the one the
// engine was opened on, and go-sqlite3's own error, unwrapped (the same
// sqlite3.Error value go-sqlite3 returns), when the file cannot be opened
// or when the lease engine's first use of it meets an error that concerns
// the whole file (not a database, corrupt, I/O), which the first statement
// would have met through go-sqlite3.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &outerConn{conn.(*core.OuterConn)}, nil
}

// Engine returns the connector's lease engine, or nil before the first
// connection and when writes take no lease (mode off, read-only, a private
// database).
func (c *Connector) Engine() *lease.Engine { return c.c.Engine() }

// Close releases the connector's share of the lease engine (handing over
// any lane this process still holds). Safe on a connector that never
// connected and safe to call twice.
func (c *Connector) Close() error { return c.c.Close() }
