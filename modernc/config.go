package modernc

import (
	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/modernc/internal/base"
	"github.com/cleocode/cleolease/writer"
)

// Config is a parsed DSN plus what a DSN cannot carry, with modernc as its
// base: BaseDriver is a *sqlite.Driver (nil means modernc's registered
// "sqlite" driver, with the hooks of sqlite.RegisterConnectionHook). Its
// other fields, their DSN parameters and their defaults are
// writer.Config's; a literal's zero fields take their defaults.
type Config = writer.Config[*sqlite.Driver]

// dialect is modernc's DSN language.
var dialect = base.Dialect{}

// NewConfig returns a Config holding every default explicitly (see
// writer.Config); SQLiteDSN is empty: set it before use.
func NewConfig() *Config { return api.NewConfig[*sqlite.Driver]() }

// ParseDSN parses a DSN in modernc's language whose query may also carry
// cleolease's parameters (those starting "_lease_" or "_migrations"),
// which are removed into the Config; every other byte is kept, in order,
// in Config.SQLiteDSN. Errors: a *writer.DSNError for an unknown cleolease
// parameter, one given twice, a value that does not parse, or a parameter
// modernc would reject or silently ignore; an error matching
// writer.ErrPrivateMemory for migrations on a private database.
func ParseDSN(dsn string) (*Config, error) {
	return api.ParseDSN[*sqlite.Driver](dsn, dialect)
}
