// Package errutil stands in, in internal/ncrucessuite's scratch module, for
// ncruces's internal/errutil (v0.37.0), which no other module may import:
// the errors ncruces's driver tests compare messages with, by the same
// names and values.
package errutil

// ErrorString is an error whose message is the string, as ncruces's.
type ErrorString string

func (e ErrorString) Error() string { return string(e) }

// The errors ncruces's driver returns for a prepared string of several
// statements and an isolation level it does not take.
const (
	TailErr      = ErrorString("sqlite3: multiple statements")
	IsolationErr = ErrorString("sqlite3: unsupported isolation level")
)
