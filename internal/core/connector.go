package core

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"

	"github.com/ngrok/sqlmw"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/busy"
	"github.com/cleocode/cleolease/internal/leasectx"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// Config is a Config whose BaseDriver is the base as the core uses it.
type Config = api.Config[sqlbase.Driver]

// Connector opens cleolease connections for one Config over one base. It
// owns the lease engine of its file (shared with other connectors on the
// same file in this process) and releases it in Close, which database/sql
// calls from DB.Close. Each base's package wraps it in its own public
// Connector.
type Connector struct {
	cfg      *Config
	dsn      string // what the base receives: SQLiteDSN plus defaults
	roDSN    string // dsn without the journal-mode default (readonly.go)
	path     string
	memory   bool
	readOnly bool           // the DSN opens read-only (mode=ro, immutable=1, a query-only setting)
	private  bool           // a private database: no lease, exactly the base alone (api.Private)
	drv      driver.Driver  // what Driver returns (Options.Driver)
	drvBase  sqlbase.Driver // the base (Config.BaseDriver)
	dialect  sqlbase.Dialect
	mw       driver.Connector // sqlmw's connector over the inner driver
	log      *slog.Logger     // where its records go (newLogger); never nil

	mu        sync.Mutex
	engine    *lease.Engine
	closed    bool
	fsChecked bool // checkFileSystem ran to a decision
	// remoteHolders: the database is on a network filesystem, allowed;
	// holders from another boot or host are never judged dead here.
	remoteHolders bool
	// liteFS: the database is on a LiteFS mount (checkFileSystem): the
	// liveness files go to a derived directory (sidecardir.go), epochs
	// take the floor at every takeover (lease.Options.Replicated), and a
	// refused write is a replica's (replica.go).
	liteFS bool
	fsErr  error // its decision: nil or a *NetworkFSError
	// pendingChecked: a read-only connection looked for pending
	// migrations (warnPendingReadOnly).
	pendingChecked bool
}

var _ driver.Connector = (*Connector)(nil)

// NewConnector validates cfg (api.Validate with dialect: a *DSNError, a
// *ConfigError, ErrPrivateMemory) and returns a Connector over its
// BaseDriver (required). cfg is copied. drv is what Driver returns: the
// base package's driver.Driver that finds this connector (nil: a driver of
// the core's own, for tests).
func NewConnector(cfg *Config, dialect sqlbase.Dialect, drv driver.Driver) (*Connector, error) {
	if cfg == nil {
		return nil, &ConfigError{Reason: "nil *Config (use NewConfig or ParseDSN)"}
	}
	if cfg.BaseDriver == nil {
		return nil, &ConfigError{Field: "BaseDriver", Reason: "no base driver"}
	}
	c := cfg.Clone()
	if err := api.Validate(c, dialect); err != nil {
		return nil, err
	}
	conn := &Connector{cfg: c, dialect: dialect, drvBase: c.BaseDriver, dsn: dialect.WithDefaults(c.SQLiteDSN, true), roDSN: dialect.WithDefaults(c.SQLiteDSN, false), log: newLogger(c)}
	t, _ := dialect.Target(c.SQLiteDSN)
	conn.path, conn.memory, conn.readOnly = t.Path, t.Memory, t.ReadOnly
	conn.private = api.Private(c, dialect)
	conn.drv = drv
	if conn.drv == nil {
		conn.drv = connectorDriver{conn}
	}
	mw, err := sqlmw.Driver(&innerDriver{c: conn}, interceptor{c: conn}).(driver.DriverContext).OpenConnector(conn.dsn)
	if err != nil {
		return nil, err
	}
	conn.mw = mw
	return conn, nil
}

// connectorDriver is the driver.Driver of a Connector made without one:
// Open connects through the connector (database/sql calls it only through
// the Connector). Package writer finds its connector.
type connectorDriver struct{ c *Connector }

func init() {
	leasectx.RegisterFinder(func(d driver.Driver) (leasectx.Connector, bool) {
		if cd, ok := d.(connectorDriver); ok {
			return cd.c.Shared(), true
		}
		return nil, false
	})
}

func (d connectorDriver) Open(string) (driver.Conn, error) { return d.c.Connect(context.Background()) }

// Config returns a copy of the connector's configuration, its defaults
// applied.
func (c *Connector) Config() *Config { return c.cfg.Clone() }

// Driver returns the driver given to NewConnector.
func (c *Connector) Driver() driver.Driver { return c.drv }

// Connect opens a connection. The first connect to a file in this process
// also opens the file's lease engine: its liveness lock and doorbell at
// once, and its own connection either at once, when the lease tables must
// be created or completed (except on a file that refuses writes, such as
// a LiteFS replica: replica.go), or at the first lease, when the new
// connection finds them complete (lease.SchemaReady); a
// private database (Config.private) gets none and is opened exactly as
// the base opens it, and so does a file SQLite opened read-only
// (readonly.go): such a connection takes no lease, runs no migrations and
// creates nothing. Errors: a *NetworkFSError (before anything is
// opened or created) when the database's directory is on a network
// filesystem and Config.NetworkFS does not allow it, ErrFileChanged when
// the path now names another file than the one the engine was opened on,
// and the base's own error, unwrapped (the same value the base returns),
// when the file cannot be opened or when the lease engine's first use of
// it meets an error that concerns the whole file (not a database,
// corrupt, I/O: see sqliteFileError), which the first statement would
// have met through the base.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.checkFileSystem(ctx); err != nil {
		return nil, err
	}
	slot := &connSlot{}
	conn, err := busy.RetryOpen(ctx, func() (driver.Conn, error) {
		return c.mw.Connect(context.WithValue(ctx, connSlotKey{}, slot))
	})
	if err != nil {
		return nil, err // the base's own error, as it returns it
	}
	if slot.lc == nil {
		conn.Close()
		return nil, errors.New("cleolease: internal error: sqlmw did not route the connect through the interceptor")
	}
	if slot.lc.readOnly || c.readOnly {
		c.warnPendingReadOnly(ctx, slot.lc.dsn)
		return &OuterConn{mw: conn, inner: slot.lc}, nil
	}
	if err := c.ensureEngine(ctx, slot.lc.Conn); err != nil {
		conn.Close()
		return nil, sqliteFileError(err)
	}
	if err := c.coldOpen(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return &OuterConn{mw: conn, inner: slot.lc}, nil
}

// leased reports whether writes through this connector take the lease:
// not in mode off, not read-only, not on a private database (nor on a
// connection SQLite opened read-only: leaseConn.leased).
func (c *Connector) leased() bool {
	return c.cfg.Mode != ModeOff && !c.readOnly && !c.private
}

// ensureEngine opens the connector's engine unless it is open. probe is the
// base connection just opened, on which the lease tables are looked for
// first (lease.SchemaReady): when they are complete, the engine opens
// without a connection of its own until its first lease.
func (c *Connector) ensureEngine(ctx context.Context, probe driver.QueryerContext) error {
	if !c.leased() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrConnectorClosed
	}
	if c.engine != nil {
		return c.engine.CheckFile()
	}
	sidecarDir, derived, err := c.sidecarDir()
	if err != nil {
		return err
	}
	ready := false
	if !c.memory && probe != nil {
		ready, _ = lease.SchemaReady(ctx, probe) // (an error: the engine reads them itself)
	}
	e, err := lease.Open(ctx, lease.Options{
		TablesReady: ready,
		Base:        c.drvBase, Path: c.path, DSN: c.dsn, RemoteHolders: c.remoteHolders, Replicated: c.liteFS, SidecarDir: sidecarDir, SidecarDirDerived: derived, TTL: c.cfg.TTL, Slice: c.cfg.Slice, Linger: c.cfg.Linger, StealAfterTTL: c.cfg.StealAfterTTL,
		Clock: c.cfg.Clock, Logger: c.log, MemoryOnly: c.memory,
	})
	if err != nil {
		return err
	}
	c.engine = e
	return nil
}

// Engine returns the connector's lease engine, or nil before the first
// connection and when writes take no lease (mode off, read-only, a private
// database).
func (c *Connector) Engine() *lease.Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.engine
}

// Close releases the connector's share of the lease engine (handing over
// any lane this process still holds). Safe on a connector that never
// connected and safe to call twice.
func (c *Connector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.engine != nil {
		return c.engine.Close()
	}
	return nil
}
