package busy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/busy"
	_ "github.com/cleocode/cleolease/internal/mattn" // reads go-sqlite3's errors
)

func TestIs(t *testing.T) {
	busyErr := sqlite3.Error{Code: sqlite3.ErrBusy}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{busyErr, true},
		{fmt.Errorf("open x: %w", busyErr), true},
		{sqlite3.Error{Code: sqlite3.ErrLocked}, true},
		{sqlite3.Error{Code: sqlite3.ErrConstraint}, false},
		{errors.New("database is locked"), false},
	} {
		if got := busy.Is(tc.err); got != tc.want {
			t.Errorf("busy.Is(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryOpen(t *testing.T) {
	n := 0
	v, err := busy.RetryOpen(context.Background(), func() (int, error) {
		if n++; n < 3 {
			return 0, sqlite3.Error{Code: sqlite3.ErrBusy}
		}
		return 7, nil
	})
	if v != 7 || err != nil || n != 3 {
		t.Fatalf("RetryOpen = %d, %v after %d calls; want 7, nil after 3", v, err, n)
	}
	other := errors.New("no such file")
	if _, err := busy.RetryOpen(context.Background(), func() (int, error) { return 0, other }); err != other {
		t.Fatalf("a non-busy error = %v, want it returned at once", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := busy.RetryOpen(ctx, func() (int, error) { return 0, sqlite3.Error{Code: sqlite3.ErrBusy} }); err != context.Canceled {
		t.Fatalf("busy with a cancelled context = %v, want context.Canceled", err)
	}
}
