// Package testcfg stands in, in internal/ncrucessuite's scratch module, for
// ncruces's internal/testcfg (v0.37.0), which no other module may import.
package testcfg

import (
	"context"

	"github.com/ncruces/go-sqlite3"
)

// Context is the test's context with SQLite's memory capped at 32 MiB, as
// ncruces's testcfg.Context.
func Context(t interface{ Context() context.Context }) context.Context {
	return sqlite3.WithMaxMemory(t.Context(), 32*1024*1024)
}
