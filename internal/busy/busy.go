// Package busy retries an open that fails with SQLite's "busy" error, from
// any base (sqlbase.IsBusy). The root package, package lease and the bases
// use it.
package busy

import (
	"context"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// Is reports whether err is (or wraps) SQLite's SQLITE_BUSY or
// SQLITE_LOCKED (sqlbase.IsBusy).
func Is(err error) bool { return sqlbase.IsBusy(err) }

// RetryOpen calls open until it returns anything but a busy error,
// sleeping 1 ms, then twice as long each time up to 50 ms, between
// attempts; it returns ctx.Err() if ctx ends first. A base switches a
// fresh file to WAL while opening it (go-sqlite3's _journal_mode, modernc's
// _pragma), and when several processes do that at once the switch can fail
// with SQLITE_BUSY, outside SQLite's busy handler.
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
