package cleolease

import (
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// openErr names the database file in an error SQLite returned while a
// connection to it was being opened ("unable to open database file: no
// such file or directory", "file is not a database" say nothing about
// which file). The SQLite error stays reachable with errors.As (the
// wrapping uses %w); other errors — cleolease's own, which already name
// the file, and the context's — are returned unchanged. Statement errors
// never pass through here: they are returned as go-sqlite3 gives them.
func (c *Connector) openErr(err error) error {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	var le *LeaseError
	if errors.As(err, &le) && le.Path != "" {
		return err
	}
	// "%s" in quotes, not %q: a Windows path keeps its single
	// backslashes, as the user spelled it.
	return fmt.Errorf("cleolease: opening database file \"%s\": %w", c.path, err)
}
