package core

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/sqlbase"
)

// The core's tests open databases over the go-sqlite3 base, as package
// cleolease does, through these helpers named after its functions.

var dialect = mattn.Dialect{}

// NewConfig is api.NewConfig over a plain go-sqlite3 base.
func NewConfig() *Config {
	c := api.NewConfig[sqlbase.Driver]()
	c.BaseDriver = mattn.For(nil)
	return c
}

// ParseDSN is api.ParseDSN in go-sqlite3's dialect, over a plain
// go-sqlite3 base.
func ParseDSN(dsn string) (*Config, error) {
	c, err := api.ParseDSN[sqlbase.Driver](dsn, dialect)
	if err != nil {
		return nil, err
	}
	c.BaseDriver = mattn.For(nil)
	return c, nil
}

// OpenDB opens cfg (a plain go-sqlite3 base when it names none).
func OpenDB(cfg *Config) (*sql.DB, error) {
	if cfg.BaseDriver == nil {
		cfg = cfg.Clone()
		cfg.BaseDriver = mattn.For(nil)
	}
	c, err := NewConnector(cfg, dialect, nil)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// The tests' sql.Open("cleolease", dsn) opens through the core over a
// plain go-sqlite3 base, as package cleolease's driver does.
func init() { sql.Register("cleolease", testDriver{}) }

type testDriver struct{}

func (testDriver) Open(dsn string) (driver.Conn, error) {
	c, err := testDriver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := c.Connect(context.Background())
	if err != nil {
		c.(*Connector).Close()
		return nil, err
	}
	conn.(*OuterConn).OwnConnector()
	return conn, nil
}

func (testDriver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg, dialect, nil)
}
