package cleolease

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

// TestConfigLiteralTakesDefaults: a Config literal that leaves a field out
// gets the field's default, not its zero value (issue 16, item 1: the
// README's literal failed with an error about "_lease_lane", and once
// filled in enough to open, its zero Wait degraded every contended write).
func TestConfigLiteralTakesDefaults(t *testing.T) {
	c, err := NewConnector(&Config{SQLiteDSN: "file:app.db", MigrationsFS: testFS{}})
	if err != nil {
		t.Fatalf("NewConnector(Config literal as in the README) = %v", err)
	}
	got := c.Config()
	want := NewConfig()
	want.SQLiteDSN, want.MigrationsFS = "file:app.db", testFS{}
	if *got != *want {
		t.Errorf("literal became %+v, want the defaults %+v", *got, *want)
	}
	if got.Wait != DefaultWait || got.Mode != ModeLocal {
		t.Errorf("Wait %v, Mode %q; want %v, %q", got.Wait, got.Mode, DefaultWait, ModeLocal)
	}
	if dsn := (&Config{SQLiteDSN: "x.db"}).FormatDSN(); dsn != "x.db" {
		t.Errorf("FormatDSN of a literal = %q, want %q (nothing differs from the defaults)", dsn, "x.db")
	}
}

// TestConfigExplicitZerosKept: the zeros that mean something stay
// expressible — from a DSN exactly as before, and in Go by starting from
// NewConfig — and a Config from ParseDSN never changes meaning on its way
// through NewConnector.
func TestConfigExplicitZerosKept(t *testing.T) {
	check := func(name string, c *Config) {
		t.Helper()
		conn, err := NewConnector(c)
		if err != nil {
			t.Fatalf("%s: NewConnector: %v", name, err)
		}
		got := conn.Config()
		if got.Wait != 0 || got.Priority != 0 || got.Slice != 0 || got.Linger != 0 {
			t.Errorf("%s: Wait %v, Priority %d, Slice %v, Linger %v; want all zero", name, got.Wait, got.Priority, got.Slice, got.Linger)
		}
		if *got != *c {
			t.Errorf("%s: NewConnector changed the Config: %+v, want %+v", name, *got, *c)
		}
	}
	parsed, err := ParseDSN("x.db?_lease_wait=0&_lease_priority=0&_lease_slice=0&_lease_linger=0")
	if err != nil {
		t.Fatal(err)
	}
	check("ParseDSN", parsed)
	again, err := ParseDSN(parsed.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	check("ParseDSN(FormatDSN)", again)
	check("NewConfig", cfg("x.db", func(c *Config) { c.Wait, c.Priority, c.Slice, c.Linger = 0, 0, 0, 0 }))
}

// TestConfigErrorsNameTheField: a bad Config field is reported by its
// Config name, not by a DSN parameter the caller never wrote.
func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		c     *Config
		field string
	}{
		{&Config{SQLiteDSN: "x.db", TTL: -time.Second}, "TTL"},
		{&Config{SQLiteDSN: "x.db", Wait: -time.Second}, "Wait"},
		{&Config{SQLiteDSN: "x.db", Mode: "sometimes"}, "Mode"},
		{&Config{SQLiteDSN: "x.db", MigrationsTable: "a-b"}, "MigrationsTable"},
		{cfg("x.db", func(c *Config) { c.Lane = "" }), "Lane"},
		{nil, ""}, // a nil *Config names no field, and does not panic
	} {
		_, err := NewConnector(tc.c)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("NewConnector(%+v) = %v, want a *ConfigError naming %s", tc.c, err, tc.field)
		}
	}
	// Every parameter names a real Config field.
	ct := reflect.TypeFor[Config]()
	for _, p := range leaseParams {
		if _, ok := ct.FieldByName(p.field); !ok {
			t.Errorf("parameter %s names Config.%s, which does not exist", p.name, p.field)
		}
	}
}

// testFS is an empty fs.FS, comparable so that Configs holding it compare.
type testFS struct{}

func (testFS) Open(string) (fs.File, error) { return nil, fs.ErrNotExist }

// TestNewConnectorCopiesConfig: NewConnector takes a *Config (as
// go-sql-driver/mysql's does) but neither fills in the caller's literal nor
// sees a later change to it.
func TestNewConnectorCopiesConfig(t *testing.T) {
	lit := &Config{SQLiteDSN: "x.db"}
	conn, err := NewConnector(lit)
	if err != nil {
		t.Fatal(err)
	}
	if *lit != (Config{SQLiteDSN: "x.db"}) {
		t.Errorf("NewConnector changed the caller's Config to %+v", *lit)
	}
	lit.Lane = "later"
	if got := conn.Config().Lane; got != DefaultLane {
		t.Errorf("a change after NewConnector reached it: Lane %q, want %q", got, DefaultLane)
	}
}
