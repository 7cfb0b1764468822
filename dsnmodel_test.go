package cleolease

import (
	"github.com/cleocode/cleolease/internal/api"
	"github.com/cleocode/cleolease/internal/mattn"
)

// The DSN model's pieces as this package's tests name them: the go-sqlite3
// dialect (internal/mattn) and cleolease's parameters (internal/api).

var (
	goSQLite3Params  = mattn.GoSQLite3Params
	isGoSQLite3Param = mattn.IsGoSQLite3Param
	isLeaseKey       = api.IsLeaseKey
)

// leaseParam is one of cleolease's parameters, as the tests read it.
type leaseParam struct{ name, field, kind, def, doc string }

var leaseParams = func() []leaseParam {
	var out []leaseParam
	for _, p := range api.Params() {
		out = append(out, leaseParam{p.Name, p.Field, p.Kind, p.Def, p.Doc})
	}
	return out
}()

func validate(c *Config) error               { return api.Validate(c, dialect) }
func sqliteDSNWithDefaults(c *Config) string { return dialect.WithDefaults(c.SQLiteDSN, true) }
func sqliteDSN(c *Config, onDisk bool) string {
	return dialect.WithDefaults(c.SQLiteDSN, onDisk)
}
func private(c *Config) bool { return api.Private(c, dialect) }

func location(c *Config) (path string, memory, readOnly bool) {
	t, _ := dialect.Target(c.SQLiteDSN)
	return t.Path, t.Memory, t.ReadOnly
}

// sqliteTarget is what a DSN opens, as the model's fuzz test reads it.
type sqliteTarget struct {
	path             string
	memory, readOnly bool
}

func analyzeDSN(dsn string) (sqliteTarget, error) {
	t, err := dialect.Target(dsn)
	return sqliteTarget{path: t.Path, memory: t.Memory, readOnly: t.ReadOnly}, err
}
