package core

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestSQLiteFileError: an SQLite error about the whole file is taken out of
// the lease engine's wrapping, as the same value; an error about one
// statement of the engine's own (a constraint), cleolease's own errors and
// nil are left as they are.
func TestSQLiteFileError(t *testing.T) {
	notADB := sqlite3.Error{Code: sqlite3.ErrNotADB, ExtendedCode: sqlite3.ErrNoExtended(sqlite3.ErrNotADB)}
	full := sqlite3.Error{Code: sqlite3.ErrFull}
	constraint := sqlite3.Error{Code: sqlite3.ErrConstraint}
	wrapped := &LeaseError{Op: "open", Path: "/x.db", Err: notADB}
	for _, tc := range []struct {
		in, want error
	}{
		{nil, nil},
		{notADB, notADB},
		{wrapped, notADB},
		{fmt.Errorf("claim: %w", &LeaseError{Op: "acquire", Err: full}), full},
		{&LeaseError{Op: "open", Err: constraint}, nil}, // unchanged: checked below
		{ErrLeaseLost, ErrLeaseLost},
	} {
		got := sqliteFileError(tc.in)
		if tc.want == nil && tc.in != nil {
			if got != tc.in {
				t.Errorf("sqliteFileError(%v) = %v; want it unchanged", tc.in, got)
			}
			continue
		}
		if !errors.Is(got, tc.want) || fmt.Sprintf("%T", got) != fmt.Sprintf("%T", tc.want) || got != tc.want {
			t.Errorf("sqliteFileError(%v) = %v (%T); want %v (%T)", tc.in, got, got, tc.want, tc.want)
		}
	}
}
