// Package cleolease is a database/sql driver for SQLite files shared by
// several processes. It wraps github.com/mattn/go-sqlite3 (through
// github.com/ngrok/sqlmw) and gives every write a cross-process writer
// lease per (scope, lane), taken transparently in BeginTx, Exec and every
// other write path:
//
//   - writers are served in order, across processes and goroutines, with no
//     SQLITE_BUSY ("database is locked") errors and bounded waits that
//     honour context deadlines;
//   - a leased transaction starts with BEGIN IMMEDIATE and checks, inside
//     the transaction and just before COMMIT, that its (holder, epoch) is
//     still the active one (fencing), so a holder that lost its lease cannot
//     commit;
//   - a crashed holder is recognised at once (a lock it keeps on a sidecar
//     file) and its lane handed to the next waiter.
//
// Users change only the driver name: sql.Open("cleolease", dsn). The DSN is
// a go-sqlite3 DSN plus cleolease's own parameters (_lease_*,
// _migrations*); see the README for the table. The scope and lane of a
// write come from WithLane(ctx, scope, lane), else from the DSN.
//
// # Reaching the native connection
//
// sql.Conn.Raw hands its callback a value implementing Conn, whose
// SQLiteConn method returns the *sqlite3.SQLiteConn (backup, RegisterFunc,
// hooks). Writes issued directly on it bypass the lease.
package cleolease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/ngrok/sqlmw"

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
// at once on a bad DSN (a *DSNError or ErrPrivateMemory) and tools that
// probe a driver by opening it are not disturbed. The empty DSN is
// accepted here and fails with ErrPrivateMemory at the first connect.
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(*cfg)
}

// Connector opens cleolease connections for one Config. It owns the lease
// engine of its file (shared with other connectors on the same file in
// this process) and releases it in Close, which database/sql calls from
// DB.Close.
type Connector struct {
	cfg      *Config
	dsn      string // what go-sqlite3 receives: SQLiteDSN plus defaults
	path     string
	memory   bool
	readOnly bool
	drv      *Driver
	base     *sqlite3.SQLiteDriver
	mw       driver.Connector // sqlmw's connector over the inner driver

	mu        sync.Mutex
	engine    *lease.Engine
	closed    bool
	fsChecked bool  // checkFileSystem ran to a decision
	fsErr     error // its decision: nil or a *NetworkFSError
}

var _ driver.Connector = (*Connector)(nil)

// NewConnector validates cfg exactly as ParseDSN validates a DSN (errors:
// *DSNError, ErrPrivateMemory) and returns a Connector for sql.OpenDB. cfg
// is copied.
func NewConnector(cfg Config) (*Connector, error) {
	c := cfg.Clone()
	if err := c.validate(); err != nil {
		return nil, err
	}
	conn := &Connector{cfg: c, dsn: c.sqliteDSNWithDefaults(), base: c.BaseDriver}
	conn.path, conn.memory, conn.readOnly = c.location()
	if conn.base == nil {
		conn.base = &sqlite3.SQLiteDriver{}
	}
	conn.drv = &Driver{c: conn}
	mw, err := sqlmw.Driver(&innerDriver{c: conn}, interceptor{c: conn}).(driver.DriverContext).OpenConnector(conn.dsn)
	if err != nil {
		return nil, err
	}
	conn.mw = mw
	return conn, nil
}

// OpenDB returns a *sql.DB over NewConnector(cfg).
func OpenDB(cfg Config) (*sql.DB, error) {
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
// also opens the file's lease engine (creating the lease tables). Errors:
// ErrPrivateMemory for an empty DSN, a *NetworkFSError (before anything is
// opened or created) when the database's directory is on a network
// filesystem and Config.NetworkFS does not allow it, ErrFileChanged when
// the path now names another file than the one the engine was opened on,
// SQLite's own error when the file cannot be opened.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	if c.cfg.SQLiteDSN == "" {
		return nil, fmt.Errorf("%w (the DSN is empty: SQLite would open a private temporary on-disk database, deleted when its connection closes)", ErrPrivateMemory)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.checkFileSystem(ctx); err != nil {
		return nil, err
	}
	slot := &connSlot{}
	conn, err := c.mw.Connect(context.WithValue(ctx, connSlotKey{}, slot))
	// go-sqlite3 switches a fresh file to WAL while opening it; when several
	// processes do that at once the switch can fail with SQLITE_BUSY, which
	// SQLite's busy handler does not cover. Retry with a capped back-off.
	for wait := time.Millisecond; err != nil && isBusy(err); wait = min(2*wait, 50*time.Millisecond) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		conn, err = c.mw.Connect(context.WithValue(ctx, connSlotKey{}, slot))
	}
	if err != nil {
		return nil, c.openErr(err)
	}
	if slot.lc == nil {
		conn.Close()
		return nil, errors.New("cleolease: internal error: sqlmw did not route the connect through the interceptor")
	}
	if err := c.ensureEngine(ctx); err != nil {
		conn.Close()
		return nil, c.openErr(err)
	}
	if err := c.coldOpen(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return &outerConn{mw: conn, inner: slot.lc}, nil
}

// leased reports whether writes through this connector take the lease.
func (c *Connector) leased() bool {
	return c.cfg.Mode != ModeOff && !c.readOnly
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
	e, err := lease.Open(ctx, lease.Options{
		Path: c.path, DSN: c.dsn, Driver: c.cfg.BaseDriver, TTL: c.cfg.TTL, Slice: c.cfg.Slice, Linger: c.cfg.Linger, StealAfterTTL: c.cfg.StealAfterTTL,
		Clock: c.cfg.Clock, Logger: c.cfg.Logger, MemoryOnly: c.memory,
	})
	if err != nil {
		return err
	}
	c.engine = e
	return nil
}

// Engine returns the connector's lease engine, or nil before the first
// connection and when writes take no lease (mode off, read-only).
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

// innerDriver is the driver sqlmw wraps: it opens go-sqlite3 connections
// and returns them as leaseConn, which carries the per-connection state
// (sqlmw hands interceptors a fresh wrapper on every call, so state cannot
// live there).
type innerDriver struct{ c *Connector }

func (d *innerDriver) Open(dsn string) (driver.Conn, error) {
	sc, err := d.c.base.Open(dsn)
	if err != nil {
		return nil, err
	}
	return &leaseConn{SQLiteConn: sc.(*sqlite3.SQLiteConn), c: d.c}, nil
}

// interceptor is cleolease's sqlmw interceptor. The lease work itself lives
// in leaseConn, where every call path (context-aware or not) converges.
// The interceptor hands the freshly opened leaseConn back to
// Connector.Connect (sqlmw hides it behind an unexported wrapper) and adds
// a file-identity check to Ping, so db.Ping reports ErrFileChanged when
// the database file was replaced.
type interceptor struct {
	sqlmw.NullInterceptor
	c *Connector
}

var _ sqlmw.Interceptor = interceptor{}

type connSlotKey struct{}

type connSlot struct{ lc *leaseConn }

func (i interceptor) ConnectorConnect(ctx context.Context, connect driver.Connector) (driver.Conn, error) {
	conn, err := connect.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if slot, ok := ctx.Value(connSlotKey{}).(*connSlot); ok {
		slot.lc, _ = conn.(*leaseConn)
	}
	return conn, nil
}

func (i interceptor) ConnPing(ctx context.Context, conn driver.Pinger) error {
	if e := i.c.Engine(); e != nil {
		if err := e.CheckFile(); err != nil {
			return err
		}
	}
	return conn.Ping(ctx)
}
