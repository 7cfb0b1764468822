package migrate

import (
	"testing"

	"github.com/golang-migrate/migrate/v4/database"
)

// Lock and Unlock are golang-migrate's sqlite3 flag: a second Lock fails
// with database.ErrLocked, an Unlock of no lock with database.ErrNotLocked.
func TestLockFlag(t *testing.T) {
	var d dbDriver
	for i, tc := range []struct {
		op   func() error
		want error
	}{
		{d.Lock, nil},
		{d.Lock, database.ErrLocked},
		{d.Unlock, nil},
		{d.Unlock, database.ErrNotLocked},
		{d.Lock, nil},
	} {
		if err := tc.op(); err != tc.want {
			t.Errorf("step %d: %v, want %v", i, err, tc.want)
		}
	}
}
