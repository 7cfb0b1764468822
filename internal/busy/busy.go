// Package busy recognises SQLite's "busy" errors and retries an open that
// fails with one. The root package and package lease both use it.
package busy

import (
	"context"
	"errors"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Is reports whether err is (or wraps) SQLite's SQLITE_BUSY or
// SQLITE_LOCKED.
func Is(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// RetryOpen calls open until it returns anything but a busy error,
// sleeping 1 ms, then twice as long each time up to 50 ms, between
// attempts; it returns ctx.Err() if ctx ends first. go-sqlite3 switches a
// fresh file to WAL while opening it, and when several processes do that at
// once the switch can fail with SQLITE_BUSY, outside SQLite's busy handler.
func RetryOpen[T any](ctx context.Context, open func() (T, error)) (T, error) {
	v, err := open()
	for wait := time.Millisecond; err != nil && Is(err); wait = min(2*wait, 50*time.Millisecond) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, ctx.Err()
		case <-t.C:
		}
		v, err = open()
	}
	return v, err
}
