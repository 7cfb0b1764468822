package cleolease

import (
	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/writer"
)

// Config is a parsed cleolease DSN plus what a DSN cannot carry, with
// go-sqlite3 as its base: BaseDriver is a *sqlite3.SQLiteDriver (nil means
// a plain &sqlite3.SQLiteDriver{}). Its fields, their DSN parameters and
// their defaults are writer.Config's.
//
// In a Config literal, every field left at its zero value takes its
// default (mode local, scope "main", lane "default", DefaultTTL,
// DefaultWait, DefaultPriority, DefaultSlice, DefaultLinger,
// DefaultMigrationsTable), so Config{SQLiteDSN: "file:app.db"} behaves as
// the DSN "file:app.db". To give Wait, Priority, Slice or Linger an explicit
// zero (no wait, the best ordinary priority, strict FIFO, no lingering),
// start from NewConfig (or ParseDSN) and set the field: a Config made by
// either holds every value explicitly and keeps its zeros, as a DSN's
// "_lease_wait=0" does. NewConnector reports a bad field as a *ConfigError
// naming it.
type Config = writer.Config[*sqlite3.SQLiteDriver]

// dialect is go-sqlite3's DSN language.
var dialect = mattn.Dialect{}

// NewConfig returns a Config holding every default explicitly: mode
// local, scope "main", lane "default", the default TTL, wait, priority,
// slice and linger, and the "schema_migrations" version table. SQLiteDSN is
// empty; set it before use. Unlike a Config literal's, its fields keep a
// zero set on them (Wait = 0 means no wait).
func NewConfig() *Config { return api.NewConfig[*sqlite3.SQLiteDriver]() }

// ParseDSN parses a cleolease DSN: a go-sqlite3 DSN (a plain path or a
// "file:" URI) whose query may also carry the parameters cleolease owns
// (those starting "_lease_" or "_migrations").
//
// The query (everything after the first '?') is split on '&'; each name and
// value is percent-decoded with url.QueryUnescape. cleolease's parameters
// are removed and applied to the Config; every other byte is kept, in
// order, in Config.SQLiteDSN (the '?' too, unless nothing is left after it).
//
// ParseDSN returns a *DSNError for an unknown cleolease parameter, one given
// twice, a value that does not parse, or an underscore parameter go-sqlite3
// v1.14.53 would silently ignore; and an error matching ErrPrivateMemory
// for migrations on a private in-memory or temporary database (which
// itself, the empty DSN included, is accepted).
func ParseDSN(dsn string) (*Config, error) {
	return api.ParseDSN[*sqlite3.SQLiteDriver](dsn, dialect)
}
