package cleolease

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/testdir"
)

// cfg returns NewConfig() with SQLiteDSN set and then changed by fns.
func cfg(sqliteDSN string, fns ...func(*Config)) *Config {
	c := NewConfig()
	c.SQLiteDSN = sqliteDSN
	for _, f := range fns {
		f(c)
	}
	return c
}

// testDSNs drives TestParseDSN, TestFormatDSNRoundTrip and the fuzz seeds.
var testDSNs = []struct {
	in   string
	want *Config
}{
	{"/tmp/app.db", cfg("/tmp/app.db")},
	{"relative/app.db", cfg("relative/app.db")},
	{"", cfg("")},
	{"x.db?_lease_quiet=true", cfg("x.db", func(c *Config) { c.Quiet = true })},
	{"file:pm?mode=memory", cfg("file:pm?mode=memory")},
	// Every byte that is not cleolease's passes through, in order and with
	// its escaping.
	{
		"file:/tmp/a%20b.db?cache=shared&_busy_timeout=5000&_lease_ttl=1m&mode=rwc",
		cfg("file:/tmp/a%20b.db?cache=shared&_busy_timeout=5000&mode=rwc", func(c *Config) { c.TTL = time.Minute }),
	},
	{
		"file:x.db?%5Flease_scope=a%2Fb&_fk=1&x=%41+b&_lease_lane=c+d",
		cfg("file:x.db?_fk=1&x=%41+b", func(c *Config) { c.Scope, c.Lane = "a/b", "c d" }),
	},
	{"app.db?_lease_ttl=10s", cfg("app.db", func(c *Config) { c.TTL = 10 * time.Second })},
	{"app.db?", cfg("app.db?")},
	{"app.db?&_lease_wait=1s", cfg("app.db?", func(c *Config) { c.Wait = time.Second })},
	{"a.db?x=1&&y=2&_lease_wait=1s&z", cfg("a.db?x=1&&y=2&z", func(c *Config) { c.Wait = time.Second })},
	{"FILE:x.db?mode=ro&_sync=OFF", cfg("FILE:x.db?mode=ro&_sync=OFF")},
	// Only cleolease parameters: SQLiteDSN is empty, accepted like "".
	{"?_lease_ttl=1s", cfg("", func(c *Config) { c.TTL = time.Second })},
	// Each cleolease parameter.
	{"d.db?_lease_mode=off", cfg("d.db", func(c *Config) { c.Mode = ModeOff })},
	{"d.db?_lease_mode=local", cfg("d.db")},
	{"d.db?_lease_mode=require", cfg("d.db", func(c *Config) { c.Mode = ModeRequire })},
	{"d.db?_lease_scope=project", cfg("d.db", func(c *Config) { c.Scope = "project" })},
	{"d.db?_lease_lane=tasks", cfg("d.db", func(c *Config) { c.Lane = "tasks" })},
	{"d.db?_lease_ttl=1500ms", cfg("d.db", func(c *Config) { c.TTL = 1500 * time.Millisecond })},
	{"d.db?_lease_wait=0", cfg("d.db", func(c *Config) { c.Wait = 0 })},
	{"d.db?_lease_priority=-7", cfg("d.db", func(c *Config) { c.Priority = -7 })},
	{"d.db?_lease_priority=2147483647", cfg("d.db", func(c *Config) { c.Priority = 1<<31 - 1 })},
	{"d.db?_lease_priority=-2147483648", cfg("d.db", func(c *Config) { c.Priority = -1 << 31 })},
	{"d.db?_lease_slice=0s", cfg("d.db", func(c *Config) { c.Slice = 0 })},
	{"d.db?_lease_linger=1s", cfg("d.db", func(c *Config) { c.Linger = time.Second })},
	{"d.db?_migrations=file%3A%2F%2Fmigrations", cfg("d.db", func(c *Config) { c.Migrations = "file://migrations" })},
	{"d.db?_migrations=file://migrations", cfg("d.db", func(c *Config) { c.Migrations = "file://migrations" })},
	{"d.db?_migrations_table=my_versions2", cfg("d.db", func(c *Config) { c.MigrationsTable = "my_versions2" })},
	{"d.db?_migrations_no_tx_wrap=true", cfg("d.db", func(c *Config) { c.MigrationsNoTxWrap = true })},
	{"d.db?_migrations_no_tx_wrap=0", cfg("d.db")},
	{
		"file:/srv/all.db?_lease_mode=require&_lease_scope=global&_lease_lane=brain&_lease_ttl=5s" +
			"&_lease_wait=250ms&_lease_priority=3&_lease_slice=1ms&_lease_linger=0s&_migrations=app" +
			"&_migrations_table=versions&_migrations_no_tx_wrap=1&_txlock=immediate",
		cfg("file:/srv/all.db?_txlock=immediate", func(c *Config) {
			c.Mode, c.Scope, c.Lane = ModeRequire, "global", "brain"
			c.TTL, c.Wait, c.Priority = 5*time.Second, 250*time.Millisecond, 3
			c.Slice, c.Linger = time.Millisecond, 0
			c.Migrations, c.MigrationsTable, c.MigrationsNoTxWrap = "app", "versions", true
		}),
	},
	// Shared in-memory databases.
	{"file::memory:?cache=shared", cfg("file::memory:?cache=shared")},
	{"file:memdb1?mode=memory&cache=shared&_lease_lane=x", cfg("file:memdb1?mode=memory&cache=shared", func(c *Config) { c.Lane = "x" })},
	{"file:/shared?vfs=memdb", cfg("file:/shared?vfs=memdb")},
	// A URI authority SQLite accepts.
	{"file://localhost/tmp/x.db", cfg("file://localhost/tmp/x.db")},
	{"file:///tmp/x.db", cfg("file:///tmp/x.db")},
}

// invalidDSNs holds each refused DSN with its exact error message.
var invalidDSNs = []struct{ in, wantErr string }{
	{"file:x.db?_lease_bogus=1", `cleolease: DSN parameter "_lease_bogus": unknown cleolease parameter`},
	{"file:x.db?_migrationsx=1", `cleolease: DSN parameter "_migrationsx": unknown cleolease parameter`},
	{"file:x.db?_lease_ttl=banana", `cleolease: DSN parameter "_lease_ttl" has bad value "banana": not a Go duration`},
	{"file:x.db?_lease_ttl=0s", `cleolease: DSN parameter "_lease_ttl" has bad value "0s": must be positive`},
	{"file:x.db?_lease_ttl=%zz", `cleolease: DSN parameter "_lease_ttl" has bad value "%zz": bad percent-encoding`},
	{"file:x.db?_busy_timout=5", `cleolease: DSN parameter "_busy_timout": unknown to go-sqlite3 v1.14.53, which would silently ignore it`},
	{"x.db?_lease=1", `cleolease: DSN parameter "_lease": unknown to go-sqlite3 v1.14.53, which would silently ignore it`},
	{"x.db?%5Fbusy_timout=5", `cleolease: DSN parameter "_busy_timout": unknown to go-sqlite3 v1.14.53, which would silently ignore it`},
	{"x.db?_lease_mode=exclusive", `cleolease: DSN parameter "_lease_mode" has bad value "exclusive": must be off, local or require`},
	{"x.db?_lease_mode=", `cleolease: DSN parameter "_lease_mode": must be off, local or require`},
	{"x.db?_lease_priority=high", `cleolease: DSN parameter "_lease_priority" has bad value "high": not a 32-bit integer`},
	{"x.db?_lease_priority=2147483648", `cleolease: DSN parameter "_lease_priority" has bad value "2147483648": not a 32-bit integer`},
	{"x.db?_migrations_table=schema-migrations", `cleolease: DSN parameter "_migrations_table" has bad value "schema-migrations": not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*)`},
	{"x.db?_migrations_table=1st", `cleolease: DSN parameter "_migrations_table" has bad value "1st": not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*)`},
	{"x.db?_lease_ttl=1s&_lease_ttl=2s", `cleolease: DSN parameter "_lease_ttl": given more than once`},
	{"x.db?_lease_lane=a&%5Flease_lane=a", `cleolease: DSN parameter "_lease_lane": given more than once`},
	{"x.db?_lease_wait=-1s", `cleolease: DSN parameter "_lease_wait" has bad value "-1s": must not be negative`},
	{"x.db?_lease_slice=-1ns", `cleolease: DSN parameter "_lease_slice" has bad value "-1ns": must not be negative`},
	{"x.db?_lease_linger=soon", `cleolease: DSN parameter "_lease_linger" has bad value "soon": not a Go duration`},
	{"x.db?_lease_scope=", `cleolease: DSN parameter "_lease_scope": must not be empty`},
	{"x.db?_migrations=", `cleolease: DSN parameter "_migrations": must not be empty`},
	{"x.db?_migrations_no_tx_wrap=maybe", `cleolease: DSN parameter "_migrations_no_tx_wrap" has bad value "maybe": not a boolean`},
	{"x.db?_lease_quiet=shh", `cleolease: DSN parameter "_lease_quiet" has bad value "shh": not a boolean`},
	{"x.db?a=1;b=2", `cleolease: DSN parameter "a" has bad value "1;b=2": contains ';', which go-sqlite3's url.ParseQuery rejects`},
	{"x.db?_fk=%zz", `cleolease: DSN parameter "_fk" has bad value "%zz": bad percent-encoding`},
	{"x.db?%zz=1", `cleolease: DSN parameter "%zz": bad percent-encoding`},
	{"file://host/x.db", `cleolease: DSN parameter "file: URI authority" has bad value "host": SQLite accepts only an empty authority or "localhost" (file:///abs/path or file:rel/path)`},
	// Migrations on private in-memory and temporary databases (which
	// themselves open as with go-sqlite3: TestPrivateDatabasesAccepted).
	{":memory:?_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN path ":memory:"`)},
	{":memory:?cache=shared&_fk=1&_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN path ":memory:"`)},
	{"file::memory:?_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN path "file::memory:"`)},
	{"file::memory:?cache=private&_migrations=./m", ErrPrivateMemory.Error() + privateMig(`DSN path "file::memory:"`)},
	{"file:m?mode=memory&_migrations=file://m", ErrPrivateMemory.Error() + privateMig(`DSN path "file:m"`)},
	{"file:m?cache=shared&mode=memory&cache=private&_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN path "file:m"`)},
	{"file:mem?vfs=memdb&_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN path "file:mem"`)},
	{"file:?cache=shared&_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN "file:" has an empty path: SQLite opens a private temporary database`)},
	{"file://localhost?_migrations=app", ErrPrivateMemory.Error() + privateMig(`DSN "file://localhost" has an empty path: SQLite opens a private temporary database`)},
	{"?_fk=1", `cleolease: DSN parameter "_fk": the DSN has an empty path before '?': go-sqlite3 would open a file named after the whole DSN and apply none of its parameters`},
	// SQLite reads the authority up to the next '/', across '?'.
	{"file://localhost?mode=memory&cache=shared", `cleolease: DSN parameter "file: URI authority" has bad value "localhost?mode=memory&cache=shared": SQLite accepts only an empty authority or "localhost" (file:///abs/path or file:rel/path)`},
}

// dsnFields returns a copy of c keeping only what a DSN can carry.
func dsnFields(c *Config) Config {
	cp := *c
	cp.MigrationsFS, cp.Logger, cp.BaseDriver, cp.Clock = nil, nil, nil, nil
	return cp
}

func TestParseDSN(t *testing.T) {
	for _, tt := range testDSNs {
		got, err := ParseDSN(tt.in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tt.in, err)
			continue
		}
		if got.SQLiteDSN != tt.want.SQLiteDSN {
			t.Errorf("ParseDSN(%q).SQLiteDSN = %q, want %q", tt.in, got.SQLiteDSN, tt.want.SQLiteDSN)
		}
		if dsnFields(got) != dsnFields(tt.want) {
			t.Errorf("ParseDSN(%q) =\n %+v\nwant\n %+v", tt.in, dsnFields(got), dsnFields(tt.want))
		}
	}
}

func TestParseDSNInvalid(t *testing.T) {
	for _, tt := range invalidDSNs {
		got, err := ParseDSN(tt.in)
		if err == nil {
			t.Errorf("ParseDSN(%q) = %+v, want error %q", tt.in, got, tt.wantErr)
			continue
		}
		if err.Error() != tt.wantErr {
			t.Errorf("ParseDSN(%q) error\n %s\nwant\n %s", tt.in, err, tt.wantErr)
		}
		var de *DSNError
		isDSN, isPrivate := errors.As(err, &de), errors.Is(err, ErrPrivateMemory)
		if strings.HasPrefix(tt.wantErr, ErrPrivateMemory.Error()) {
			if !isPrivate || isDSN {
				t.Errorf("ParseDSN(%q): errors.Is(err, ErrPrivateMemory) = %v, errors.As(*DSNError) = %v; want true, false", tt.in, isPrivate, isDSN)
			}
		} else if !isDSN || isPrivate {
			t.Errorf("ParseDSN(%q): errors.As(*DSNError) = %v, errors.Is(err, ErrPrivateMemory) = %v; want true, false", tt.in, isDSN, isPrivate)
		}
	}
}

func TestFormatDSNRoundTrip(t *testing.T) {
	for _, tt := range testDSNs {
		c, err := ParseDSN(tt.in)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", tt.in, err)
		}
		f := c.FormatDSN()
		c2, err := ParseDSN(f)
		if err != nil {
			t.Errorf("ParseDSN(FormatDSN(%q) = %q): %v", tt.in, f, err)
			continue
		}
		if dsnFields(c2) != dsnFields(c) {
			t.Errorf("round trip of %q via %q:\n %+v\nwant\n %+v", tt.in, f, dsnFields(c2), dsnFields(c))
		}
		if f2 := c2.FormatDSN(); f2 != f {
			t.Errorf("FormatDSN not stable for %q: %q then %q", tt.in, f, f2)
		}
	}
}

func TestFormatDSN(t *testing.T) {
	tests := []struct {
		c    *Config
		want string
	}{
		{cfg("x.db"), "x.db"},
		{cfg(""), ""},
		{cfg("x.db?mode=ro"), "x.db?mode=ro"},
		{cfg("x.db?", func(c *Config) { c.TTL = time.Minute }), "x.db?&_lease_ttl=1m0s"},
		{cfg("x.db", func(c *Config) { c.MigrationsTable = "" }), "x.db"},
		{
			cfg("file:a%20b.db?cache=shared", func(c *Config) {
				c.Mode, c.Lane, c.Wait, c.Migrations = ModeRequire, "a b/c&d", 0, "file://m"
				c.MigrationsNoTxWrap = true
			}),
			"file:a%20b.db?cache=shared&_lease_lane=a+b%2Fc%26d&_lease_mode=require&_lease_wait=0s" +
				"&_migrations=file%3A%2F%2Fm&_migrations_no_tx_wrap=true",
		},
	}
	for _, tt := range tests {
		if got := tt.c.FormatDSN(); got != tt.want {
			t.Errorf("FormatDSN(%+v) = %q, want %q", dsnFields(tt.c), got, tt.want)
		}
	}
}

func TestParamsSorted(t *testing.T) {
	if !slices.IsSorted(goSQLite3Params) {
		t.Errorf("goSQLite3Params is not sorted: %q", goSQLite3Params)
	}
	if len(slices.Compact(slices.Clone(goSQLite3Params))) != len(goSQLite3Params) {
		t.Errorf("goSQLite3Params has duplicates")
	}
	for i, p := range leaseParams {
		if !isLeaseKey(p.name) {
			t.Errorf("leaseParams[%d] = %q is outside cleolease's namespace", i, p.name)
		}
		if i > 0 && leaseParams[i-1].name >= p.name {
			t.Errorf("leaseParams not sorted: %q before %q", leaseParams[i-1].name, p.name)
		}
		if isGoSQLite3Param(p.name) {
			t.Errorf("%q is both cleolease's and go-sqlite3's", p.name)
		}
	}
	for _, p := range goSQLite3Params {
		if !strings.HasPrefix(p, "_") || isLeaseKey(p) {
			t.Errorf("goSQLite3Params has %q", p)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       *Config
		wantErr string // "" for valid
	}{
		{"defaults", cfg("x.db"), ""},
		{"literal takes the defaults", &Config{SQLiteDSN: "x.db"}, ""},
		{"mode", cfg("x.db", func(c *Config) { c.Mode = "LOCAL" }), `cleolease: Config.Mode has bad value "LOCAL": must be off, local or require`},
		{"ttl", cfg("x.db", func(c *Config) { c.TTL = 0 }), `cleolease: Config.TTL has bad value "0s": must be positive`},
		{"literal ttl", &Config{SQLiteDSN: "x.db", TTL: -time.Second}, `cleolease: Config.TTL has bad value "-1s": must be positive`},
		{"wait", cfg("x.db", func(c *Config) { c.Wait = -time.Second }), `cleolease: Config.Wait has bad value "-1s": must not be negative`},
		{"scope", cfg("x.db", func(c *Config) { c.Scope = "" }), `cleolease: Config.Scope: must not be empty`},
		{"table", cfg("x.db", func(c *Config) { c.MigrationsTable = "a.b" }), `cleolease: Config.MigrationsTable has bad value "a.b": not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*)`},
		{"lease param in SQLiteDSN", cfg("x.db?_lease_ttl=1s"), `cleolease: DSN parameter "_lease_ttl": a cleolease parameter in Config.SQLiteDSN; set the Config field instead`},
		{"typo in SQLiteDSN", cfg("x.db?_jurnal=WAL"), `cleolease: DSN parameter "_jurnal": unknown to go-sqlite3 v1.14.53, which would silently ignore it`},
		{"private memory", cfg(":memory:"), ""},
		{"migrations on private memory", cfg(":memory:", func(c *Config) { c.Migrations = "app" }), ErrPrivateMemory.Error() + privateMig(`DSN path ":memory:"`)},
		{"a Migrator on the empty DSN", cfg("", func(c *Config) { c.Migrator = MigratorFunc(nil) }), ErrPrivateMemory.Error() + privateMig("the DSN is empty: SQLite opens a private temporary on-disk database")},
		{"exclusive locking on private memory", cfg("file:m?mode=memory&_locking_mode=EXCLUSIVE"), ""},
	}
	if strconv.IntSize == 64 { // a 32-bit int holds no wider value
		wide := int64(1) << 40
		tests = append(tests, struct {
			name    string
			c       *Config
			wantErr string
		}{"priority", cfg("x.db", func(c *Config) { c.Priority = int(wide) }), `cleolease: Config.Priority has bad value "1099511627776": not a 32-bit integer`})
	}
	for _, tt := range tests {
		err := validate(tt.c)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: validate: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("%s: validate = %v, want %s", tt.name, err, tt.wantErr)
		}
	}

	c := cfg("x.db", func(c *Config) { c.MigrationsTable = "" })
	if err := validate(c); err != nil || c.MigrationsTable != DefaultMigrationsTable {
		t.Errorf("validate with empty MigrationsTable: err %v, table %q; want nil, %q", err, c.MigrationsTable, DefaultMigrationsTable)
	}
}

func TestCloneConfig(t *testing.T) {
	c, err := ParseDSN("file:x.db?_lease_lane=l&_lease_ttl=3s&mode=rwc")
	if err != nil {
		t.Fatal(err)
	}
	c.MigrationsFS = os.DirFS(testdir.New(t))
	c2 := c.Clone()
	if c2 == c {
		t.Fatal("Clone returned the same pointer")
	}
	if *c2 != *c {
		t.Fatalf("Clone = %+v, want %+v", c2, c)
	}
	c2.Lane, c2.TTL = "other", time.Hour
	if c.Lane != "l" || c.TTL != 3*time.Second {
		t.Errorf("changing the clone changed the original: %+v", c)
	}
	if c2.MigrationsFS != c.MigrationsFS {
		t.Error("Clone did not share MigrationsFS")
	}
	if (*Config)(nil).Clone() != nil {
		t.Error("nil.Clone() != nil")
	}
}

func TestLocation(t *testing.T) {
	tests := []struct {
		dsn              string
		path             string
		memory, readOnly bool
	}{
		{"", "", false, false},
		{"/tmp/a.db", "/tmp/a.db", false, false},
		{"rel/a%20b.db", "rel/a%20b.db", false, false},
		// go-sqlite3 strips a plain path's query before SQLite sees it.
		{"/tmp/a.db?mode=ro&_fk=1", "/tmp/a.db", false, false},
		{"FILE:/tmp/a.db?mode=ro", "FILE:/tmp/a.db", false, false},
		{"file:/tmp/a%20b.db?mode=ro", "/tmp/a b.db", false, true},
		{"file:a+b.db", "a+b.db", false, false},
		{"file:///tmp/x.db?mode=rwc", "/tmp/x.db", false, false},
		{"file://localhost/tmp/x.db?immutable=1", "/tmp/x.db", false, true},
		{"file:x.db?immutable=yes", "x.db", false, true},
		{"file:x.db?immutable=0&immutable=1", "x.db", false, false},
		{"file:rel/x.db#frag?mode=ro", "rel/x.db", false, false},
		{"file:x.db?a=b#&mode=ro", "x.db", false, false},
		{"file:x.db?mode=memory&mode=ro", "x.db", false, true},
		{"file:x%00junk.db?mode=ro", "x", false, true},
		{"file:x.db?%00mode=ro", "x.db", false, false},
		{"file:x.db?=ro&mode=ro", "x.db", false, true},
		{"file:x.db?mo%64e=r%6F", "x.db", false, true},
		{"file::memory:?cache=shared", ":memory:", true, false},
		{"file:shm?mode=memory&cache=shared", "shm", true, false},
		{"file:/m?vfs=memdb", "/m", true, false},
		{"/m?vfs=memdb", "/m", true, false},
	}
	for _, tt := range tests {
		c := cfg(tt.dsn)
		path, memory, readOnly := location(c)
		if path != tt.path || memory != tt.memory || readOnly != tt.readOnly {
			t.Errorf("location(%q) = %q, %v, %v; want %q, %v, %v", tt.dsn, path, memory, readOnly, tt.path, tt.memory, tt.readOnly)
		}
	}
}

func TestDefaultsAppended(t *testing.T) {
	const all = "_busy_timeout=30000&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1"
	tests := []struct{ dsn, want string }{
		{"", ""},
		{"x.db", "x.db?" + all},
		{"x.db?", "x.db?" + all},
		{"x.db?mode=ro&", "x.db?mode=ro&" + all}, // plain path: mode=ro never reaches SQLite
		{"file:x.db?cache=shared", "file:x.db?cache=shared&" + all},
		{"x.db?_timeout=5", "x.db?_timeout=5&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1"},
		{"x.db?_busy_timeout=5&_journal=DELETE", "x.db?_busy_timeout=5&_journal=DELETE&_synchronous=NORMAL&_foreign_keys=1"},
		{"file:x.db?_journal_mode=DELETE&_sync=OFF&_fk=0&_timeout=1", "file:x.db?_journal_mode=DELETE&_sync=OFF&_fk=0&_timeout=1"},
		{"x.db?_synchronous=FULL&_foreign_keys=0", "x.db?_synchronous=FULL&_foreign_keys=0&_busy_timeout=30000&_journal_mode=WAL"},
		{"x.db?%5Ffk=0", "x.db?%5Ffk=0&_busy_timeout=30000&_journal_mode=WAL&_synchronous=NORMAL"},
		{"x.db?_fk=", "x.db?_fk=&_busy_timeout=30000&_journal_mode=WAL&_synchronous=NORMAL"},
		{"file:x.db?mode=ro", "file:x.db?mode=ro&_busy_timeout=30000&_synchronous=NORMAL&_foreign_keys=1"},
		{"file:x.db?immutable=1", "file:x.db?immutable=1&_busy_timeout=30000&_synchronous=NORMAL&_foreign_keys=1"},
		{"file::memory:?cache=shared", "file::memory:?cache=shared&_busy_timeout=30000&_synchronous=NORMAL&_foreign_keys=1"},
		{"file:/m?vfs=memdb", "file:/m?vfs=memdb&_busy_timeout=30000&_synchronous=NORMAL&_foreign_keys=1"},
	}
	for _, tt := range tests {
		c := cfg(tt.dsn)
		got := sqliteDSNWithDefaults(c)
		if got != tt.want {
			t.Errorf("sqliteDSNWithDefaults(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
		if !strings.HasPrefix(got, tt.dsn) {
			t.Errorf("sqliteDSNWithDefaults(%q) = %q changed the caller's bytes", tt.dsn, got)
		}
		if c.SQLiteDSN != tt.dsn {
			t.Errorf("sqliteDSNWithDefaults changed SQLiteDSN to %q", c.SQLiteDSN)
		}
	}
}

// TestDefaultsAppliedByGoSQLite3 checks against go-sqlite3 itself that the
// appended parameters take effect, that the DSN's own value wins, and that
// a plain path's query does not become part of the file name.
func TestDefaultsAppliedByGoSQLite3(t *testing.T) {
	dir := testdir.New(t)
	tests := []struct {
		dsn, file string
		busy      int
		journal   string
		sync      int // 0 OFF, 1 NORMAL, 2 FULL
		fk        int
	}{
		{filepath.Join(dir, "plain.db"), "plain.db", 30000, "wal", 1, 1},
		{"file:" + filepath.Join(dir, "uri%20x.db") + "?mode=rwc", "uri x.db", 30000, "wal", 1, 1},
		{filepath.Join(dir, "own.db") + "?_timeout=1234&_journal=DELETE&_sync=FULL&_fk=0", "own.db", 1234, "delete", 2, 0},
	}
	for _, tt := range tests {
		c, err := ParseDSN(tt.dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", tt.dsn, err)
		}
		db, err := sql.Open("sqlite3", sqliteDSNWithDefaults(c))
		if err != nil {
			t.Fatal(err)
		}
		var busy, sync, fk int
		var journal string
		for q, dst := range map[string]any{
			"PRAGMA busy_timeout": &busy, "PRAGMA journal_mode": &journal,
			"PRAGMA synchronous": &sync, "PRAGMA foreign_keys": &fk,
		} {
			if err := db.QueryRow(q).Scan(dst); err != nil {
				t.Fatalf("%s on %q: %v", q, tt.dsn, err)
			}
		}
		db.Close()
		if busy != tt.busy || journal != tt.journal || sync != tt.sync || fk != tt.fk {
			t.Errorf("%q: busy_timeout %d, journal_mode %s, synchronous %d, foreign_keys %d; want %d, %s, %d, %d",
				tt.dsn, busy, journal, sync, fk, tt.busy, tt.journal, tt.sync, tt.fk)
		}
		if _, err := os.Stat(filepath.Join(dir, tt.file)); err != nil {
			t.Errorf("%q: %v", tt.dsn, err)
		}
		if path, _, _ := location(c); path != filepath.Join(dir, tt.file) {
			t.Errorf("location(%q) = %q, want %q", tt.dsn, path, filepath.Join(dir, tt.file))
		}
	}
}

// A DSN's secrets (go-sqlite3's _auth_pass) never appear in an error.
func TestDSNErrorsDoNotEchoSecrets(t *testing.T) {
	for _, dsn := range []string{
		"?_auth_pass=hunter2",
		":memory:?_auth_pass=hunter2&_migrations=app",
		"file:?_auth_pass=hunter2&_migrations=app",
		"file:x.db?_auth_pass=hunter2&_lease_bogus=1",
		"file:x.db?_auth_pass=hunter2&_busy_timout=5",
		"file:x.db?_auth_pass=hunter2&_lease_ttl=banana",
	} {
		_, err := ParseDSN(dsn)
		if err == nil {
			t.Fatalf("%s: no error", dsn)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error echoes the password: %v", dsn, err)
		}
	}
}

// privateMig is the text ErrPrivateMemory's error adds for migrations on
// the private database what.
func privateMig(what string) string {
	return " (" + what + "; its migrations would run on a connection of their own, which no other connection sees)"
}

// TestPrivateDatabasesAccepted: a private database (in memory and not
// shared, or temporary) parses, is private, takes no lease and keeps no
// go-sqlite3 parameter from being checked; a shared one is not private.
func TestPrivateDatabasesAccepted(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		private bool
	}{
		{"", true},
		{":memory:", true},
		{":memory:?cache=shared&_fk=1", true},
		{":memory:?_lease_ttl=1s", true},
		{"file::memory:", true},
		{"file::memory:?cache=private", true},
		{"file:m?mode=memory", true},
		{"file:m?cache=shared&mode=memory&cache=private", true},
		{"file:mem?vfs=memdb", true},
		{"file:?cache=shared", true},
		{"file:?mode=memory&cache=shared", true},
		{"file://localhost", true},
		{"file:m?mode=memory&_locking_mode=EXCLUSIVE&_lease_mode=require", true},
		{"file::memory:?cache=shared", false},
		{"file:m?mode=memory&cache=shared", false},
		{"file:/m?vfs=memdb", false},
		{"file:x.db", false},
	} {
		c, err := ParseDSN(tc.dsn)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tc.dsn, err)
			continue
		}
		if got := private(c); got != tc.private {
			t.Errorf("ParseDSN(%q).private() = %v, want %v", tc.dsn, got, tc.private)
		}
	}
	if _, err := ParseDSN("file:m?mode=memory&_busy_timout=1"); err == nil {
		t.Error("a go-sqlite3 typo on a private database was accepted")
	}
}
