package lease

// The lease tables live in the user's database, where tools that walk the
// schema meet them: golang-migrate's Drop drops every table, an
// application may empty every table, an export may skip them. This file
// is how the engine lives with that: it recognises the tables' absence,
// recreates them, names what happened to a lost lease row, and keeps
// epochs increasing across the loss with a floor that does not live in
// the tables (epochMemory.floor, epochs.go).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// missingTable reports SQLite's "no such table" error for one of the lease
// tables: something dropped them since the engine created them.
func missingTable(err error) bool {
	c, ok := sqlbase.Code(err)
	if !ok || c.Code != sqlbase.Error {
		return false
	}
	msg := c.Message
	return strings.Contains(msg, "no such table") &&
		(strings.Contains(msg, "_writer_leases") || strings.Contains(msg, "_writer_queue"))
}

// recreate creates the lease tables again after they were dropped, as the
// first open does (bootstrap: idempotent, safe when several processes do
// it at once).
func (e *Engine) recreate(ctx context.Context) error {
	if err := e.bootstrap(ctx); err != nil {
		return err
	}
	e.logf(slog.LevelInfo, "cleolease: lease tables recreated (they had been dropped)")
	return nil
}

// endGrant ends grant g because a transaction of this process removed or
// changed the lane's row itself (Fencing.Committed): the user's intent,
// not a loss. The lane's waiters are told to look, and this process's next
// write claims the lane again, at an epoch above g's.
func (l *laneState) endGrant(g *grant) {
	why := fmt.Sprintf("a transaction of this process removed or changed the lease row of epoch %d itself; the next write takes the lease again", g.epoch)
	g.why.CompareAndSwap(nil, &why)
	l.epochs.note(g.epoch)
	if g.lost.CompareAndSwap(false, true) {
		l.e.logf(slog.LevelInfo, "cleolease: lease row removed by this process's own transaction", "scope", l.scope, "lane", l.lane, "epoch", g.epoch)
	}
	l.dropRow(g)
	l.forwardPending("") // the lane is free: its waiters look
}

// goneSQL reads what became of a lost grant's row: the lane's active row,
// or else the grant's own row, released. Arguments: scope, lane, holder
// id, epoch.
const goneSQL = `SELECT holder_id, holder_pid, epoch, active, reentrancy_depth FROM main._writer_leases
	WHERE scope = ?1 AND lane = ?2 AND (active = 1 OR (holder_id = ?3 AND epoch = ?4))
	ORDER BY active DESC LIMIT 1`

// brokenDepth is the reentrancy_depth Break writes into the row it frees
// (a release writes 0; the original implementation never writes a negative
// depth), so that the holder it broke can say so.
const brokenDepth = -1

// whyGone says, for an error's reason, what became of grant g's row,
// reading the lane with read (on the caller's connection, inside its
// transaction, when there is one). A reason already known in memory (a
// Break by this process) wins. Only a row that Break freed is called
// broken; a row another holder took over, a deleted row and dropped
// tables are named for what they are.
func (l *laneState) whyGone(ctx context.Context, read rowReader, g *grant) string {
	if why := g.why.Load(); why != nil {
		return *why
	}
	var holderID string
	var pid, epoch, active, depth int64
	found, err := read(ctx, goneSQL, []any{l.scope, l.lane, l.e.holderID, g.epoch}, &holderID, &pid, &epoch, &active, &depth)
	switch {
	case missingTable(err):
		return "the lease tables were dropped by a transaction that did not hold this lease"
	case err != nil:
		return "the lease row could not be read back: " + err.Error()
	case !found:
		return "the lease row was deleted by a transaction that did not hold this lease"
	case active == 0 && depth == brokenDepth:
		return "the lane was broken administratively (Break)"
	case active == 0:
		return "the lease row was marked released by another connection"
	case holderID == l.e.holderID:
		return fmt.Sprintf("the lane's row names this process at another epoch (%d), which it does not hold (a file restored under it?)", epoch)
	}
	l.epochs.note(epoch)
	return fmt.Sprintf("another holder, %s (pid %d), took over the lane at epoch %d", holderID, pid, epoch)
}

// rowReader runs query with args and scans its first row into dest (each
// a *string or *int64); found is false when there is no row.
type rowReader func(ctx context.Context, query string, args []any, dest ...any) (found bool, err error)

// dbReader is a rowReader on a *sql.DB (the engine's connection).
func dbReader(db *sql.DB) rowReader {
	return func(ctx context.Context, query string, args []any, dest ...any) (bool, error) {
		var found bool
		err := retryBusyOnce(ctx, func() error {
			err := db.QueryRowContext(ctx, query, args...).Scan(dest...)
			found = err == nil
			if err == sql.ErrNoRows {
				err = nil
			}
			return err
		})
		return found, err
	}
}

// retryBusyOnce runs fn again after SQLITE_BUSY for up to a second (the
// engine's connection has busy_timeout 0): whyGone's read is only for an
// error message.
func retryBusyOnce(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	bo := backoff{min: 20 * time.Microsecond, max: time.Millisecond}
	for {
		err := fn()
		if err == nil || !isBusy(err) || bo.sleep(ctx, nil) != nil {
			return err
		}
	}
}

// connReader is a rowReader on a driver connection (the caller's, inside
// its transaction).
func connReader(q driver.QueryerContext) rowReader {
	return func(ctx context.Context, query string, args []any, dest ...any) (bool, error) {
		nv := make([]driver.NamedValue, len(args))
		for i, a := range args {
			nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := q.QueryContext(ctx, query, nv)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		vals := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(vals); err == io.EOF {
			return false, nil
		} else if err != nil {
			return false, err
		}
		for i, d := range dest {
			if i >= len(vals) {
				break
			}
			switch p := d.(type) {
			case *string:
				switch v := vals[i].(type) {
				case string:
					*p = v
				case []byte:
					*p = string(v)
				default:
					*p = fmt.Sprint(v)
				}
			case *int64:
				*p, _ = vals[i].(int64)
			}
		}
		return true, nil
	}
}
