package ncruces

import (
	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/ncruces/internal/base"
	"github.com/cleocode/cleolease/writer"
)

// Callbacks are the callbacks ncruces's driver.Open takes beside the DSN:
// Init runs on each new connection of the application's (after the DSN's
// _pragma values; its error fails the connection), Term when one closes.
// Either may be nil. They never run on the lease engine's own connection.
type Callbacks = base.Callbacks

// Config is a parsed DSN plus what a DSN cannot carry, with ncruces as its
// base: BaseDriver is the application's *Callbacks (nil for none). Its
// other fields, their DSN parameters and their defaults are
// writer.Config's; a literal's zero fields take their defaults.
type Config = writer.Config[*Callbacks]

// dialect is ncruces's DSN language.
var dialect = base.Dialect{}

// NewConfig returns a Config holding every default explicitly (see
// writer.Config); SQLiteDSN is empty: set it before use.
func NewConfig() *Config { return api.NewConfig[*Callbacks]() }

// ParseDSN parses a DSN in ncruces's language (a file name, or a file: URI
// with _pragma, _txlock and _timefmt) whose query may also carry
// cleolease's parameters (those starting "_lease_" or "_migrations"),
// which are removed into the Config; every other byte is kept, in order,
// in Config.SQLiteDSN. Errors: a *writer.DSNError for an unknown cleolease
// parameter, one given twice, a value that does not parse, or a parameter
// ncruces would reject or silently ignore; an error matching
// writer.ErrPrivateMemory for migrations on a private database.
func ParseDSN(dsn string) (*Config, error) {
	return api.ParseDSN[*Callbacks](dsn, dialect)
}
