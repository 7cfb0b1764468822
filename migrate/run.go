package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cleocode/cleolease/lease"
)

// Run runs fn — another migration tool (ent's Schema.Create, goose's Up,
// atlas) or hand-written DDL — on a private *sql.DB under the cold-open
// lease, the lease golang-migrate's migrations run under (lane
// ("cleolease", "migrate"), priority 0; never degraded; bounded by ctx and
// Options.Wait), so that processes running it at once run it one at a time.
//
// The *sql.DB is opened from Options.DSN on Options.Base as the
// application configured it (Base.Open: the callbacks of its connection
// hook stay), holds at most one connection, and is closed when fn
// returns: it is valid only for the call (fn may close it; keeping it, or
// statements or transactions from it, for later is an error). It is never
// a caller's pool and never goes through the cleolease driver, so fn cannot
// deadlock on a cleolease connection that is opening, nor queue for an
// application lane. Because the connection is single, fn must not hold a
// *sql.Rows open while it runs another statement on db outside that
// transaction (it would wait for ctx).
//
// fn sees the database as the previous holder of the lease left it, so a
// tool that reads the schema or its own version table before it changes
// anything applies each change exactly once however many processes run it.
// Options.SourceURL, FS, Table and NoTxWrap are not used.
//
// Errors: fn's error wrapped so that errors.Is matches ErrFailed (and
// errors.As reaches fn's error types); a *lease.Error matching
// lease.ErrUnavailable when Options.Wait passed; the context's error when
// ctx ended while waiting for the lease.
func Run(ctx context.Context, o Options, fn func(ctx context.Context, db *sql.DB) error) error {
	o, err := o.normalize(false)
	if err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("cleolease/migrate: Run: nil function")
	}
	if o.Engine != nil {
		opts := lease.AcquireOptions{Priority: 0, Wait: -1, Require: true} // -1: no bound but ctx
		if o.Wait > 0 {
			opts.Wait = o.Wait
		}
		h, err := o.Engine.Acquire(ctx, Scope, Lane, opts)
		if err != nil {
			return err
		}
		defer h.Release()
	}
	db := openPrivate(o, true)
	defer db.Close()
	start := time.Now()
	err = fn(ctx, db)
	observeRun(o, start, err)
	if err != nil {
		return &funcError{err: err}
	}
	return nil
}

// funcError is a failed migration function: it matches ErrFailed and
// everything its cause matches.
type funcError struct{ err error }

func (e *funcError) Error() string {
	return fmt.Sprintf("cleolease/migrate: migration function failed: %v", e.err)
}

func (e *funcError) Unwrap() []error { return []error{ErrFailed, e.err} }
