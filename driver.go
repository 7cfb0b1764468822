package cleolease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"

	"github.com/mattn/go-sqlite3"
	"github.com/ngrok/sqlmw"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/busy"
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
	conn.(*outerConn).ownsConnector = true
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
	cfg      *Config
	dsn      string // what go-sqlite3 receives: SQLiteDSN plus defaults
	roDSN    string // dsn without the journal-mode default (readonly.go)
	path     string
	memory   bool
	readOnly bool // the DSN opens read-only (mode=ro, immutable=1, _query_only)
	private  bool // a private database: no lease, exactly go-sqlite3 (Config.private)
	drv      *Driver
	base     *sqlite3.SQLiteDriver // Config.BaseDriver, or a plain driver
	drvBase  sqlbase.Driver        // the base as the driver core uses it (mattn.For(base))
	mw       driver.Connector      // sqlmw's connector over the inner driver
	log      *slog.Logger          // where its records go (newLogger); never nil

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
	c := cfg.Clone()
	if err := api.Validate(c, dialect); err != nil {
		return nil, err
	}
	conn := &Connector{cfg: c, dsn: dialect.WithDefaults(c.SQLiteDSN, true), roDSN: dialect.WithDefaults(c.SQLiteDSN, false), base: c.BaseDriver, log: newLogger(c)}
	t, _ := dialect.Target(c.SQLiteDSN)
	conn.path, conn.memory, conn.readOnly = t.Path, t.Memory, t.ReadOnly
	conn.private = api.Private(c, dialect)
	conn.drvBase = mattn.For(c.BaseDriver)
	conn.base = conn.drvBase.(*mattn.Base).Driver()
	conn.drv = &Driver{c: conn}
	mw, err := sqlmw.Driver(&innerDriver{c: conn}, interceptor{c: conn}).(driver.DriverContext).OpenConnector(conn.dsn)
	if err != nil {
		return nil, err
	}
	conn.mw = mw
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

// Config returns a copy of the connector's configuration.
func (c *Connector) Config() *Config { return c.cfg.Clone() }

// Driver returns this connector's cleolease driver.
func (c *Connector) Driver() driver.Driver { return c.drv }

// Connect opens a connection. The first connect to a file in this process
// also opens the file's lease engine (creating the lease tables, except on
// a file that refuses writes, such as a LiteFS replica: replica.go); a
// private database (Config.private) gets none and is opened exactly as
// go-sqlite3 opens it, and so does a file SQLite opened read-only
// (readonly.go): such a connection takes no lease, runs no migrations and
// creates nothing. Errors: a *NetworkFSError (before anything is
// opened or created) when the database's directory is on a network
// filesystem and Config.NetworkFS does not allow it, ErrFileChanged when
// the path now names another file than the one the engine was opened on,
// and go-sqlite3's own error, unwrapped (the same sqlite3.Error value
// go-sqlite3 returns), when the file cannot be opened or when the lease
// engine's first use of it meets an error that concerns the whole file
// (not a database, corrupt, I/O: see sqliteFileError), which the first
// statement would have met through go-sqlite3.
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
		return nil, err // go-sqlite3's own error, as it returns it
	}
	if slot.lc == nil {
		conn.Close()
		return nil, errors.New("cleolease: internal error: sqlmw did not route the connect through the interceptor")
	}
	if slot.lc.readOnly || c.readOnly {
		c.warnPendingReadOnly(ctx, slot.lc.dsn)
		return &outerConn{mw: conn, inner: slot.lc}, nil
	}
	if err := c.ensureEngine(ctx); err != nil {
		conn.Close()
		return nil, sqliteFileError(err)
	}
	if err := c.coldOpen(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return &outerConn{mw: conn, inner: slot.lc}, nil
}

// leased reports whether writes through this connector take the lease:
// not in mode off, not read-only, not on a private database (nor on a
// connection SQLite opened read-only: leaseConn.leased).
func (c *Connector) leased() bool {
	return c.cfg.Mode != ModeOff && !c.readOnly && !c.private
}

func (c *Connector) ensureEngine(ctx context.Context) error {
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
	e, err := lease.Open(ctx, lease.Options{
		Base: c.drvBase, Path: c.path, DSN: c.dsn, RemoteHolders: c.remoteHolders, Replicated: c.liteFS, SidecarDir: sidecarDir, SidecarDirDerived: derived, TTL: c.cfg.TTL, Slice: c.cfg.Slice, Linger: c.cfg.Linger, StealAfterTTL: c.cfg.StealAfterTTL,
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
