package lease

import (
	"context"
	"database/sql/driver"
	"io"
	"log/slog"
	"time"
)

// Confirmer is the caller's connection, on which a waiter told of its
// grant by datagram opens its write transaction at once and confirms the
// grant inside it (AcquireOptions.Confirm), instead of first reading the
// lane's row on the engine's connection. The datagram is only a hint: the
// row, read under SQLite's write lock, decides.
type Confirmer interface {
	// BeginImmediate opens the caller's write transaction (BEGIN
	// IMMEDIATE), honouring ctx.
	BeginImmediate(ctx context.Context) error
	// QueryContext runs a read inside that transaction.
	driver.QueryerContext
	// Rollback ends that transaction.
	Rollback()
}

// confirmSQL returns the id and epoch of the lane's active row when it is
// the only active row of (scope, lane) and names holder ?3 with an integer
// epoch; no row otherwise.
const confirmSQL = `SELECT id, epoch FROM main._writer_leases
	WHERE scope = ?1 AND lane = ?2 AND active = 1 AND holder_id = ?3 AND typeof(epoch) = 'integer'
	AND (SELECT count(*) FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND active = 1) = 1`

// confirmInTx opens the caller's transaction through cf and reads there
// whether the lane is this process's: the grant, with the transaction left
// open, or nil with it rolled back (a forged, stale or early datagram: the
// claim goes on waiting). err is BEGIN's error (nothing is open then).
func (c *claimRun) confirmInTx(ctx context.Context, cf Confirmer) (*grant, error) {
	l := c.l
	if err := cf.BeginImmediate(ctx); err != nil {
		return nil, err
	}
	id, epoch, err := queryRowEpoch(context.WithoutCancel(ctx), cf, confirmSQL, l.scope, l.lane, l.e.holderID)
	if err != nil || epoch <= 0 || epoch >= 1<<62 || !c.handedToUs(epoch) {
		cf.Rollback()
		l.mu.Lock()
		l.claimSlot.settledLocked() // (a real grant arriving now rings again)
		l.mu.Unlock()
		if err != nil && err != io.EOF {
			l.e.logf(slog.LevelDebug, "cleolease: grant not confirmed", "scope", l.scope, "lane", l.lane, "err", err)
		}
		l.e.stats.HintsRefused.Add(1)
		return nil, nil
	}
	l.e.stats.Confirmed.Add(1)
	c.handed = true
	return &grant{id: id, epoch: epoch, at: time.Now()}, nil
}

// queryRowEpoch runs query on q with args (positional, from ?1) and returns
// the first row's two integer columns, a lease row's id and epoch; io.EOF
// when there is no row.
func queryRowEpoch(ctx context.Context, q driver.QueryerContext, query string, args ...any) (id, epoch int64, err error) {
	named := make([]driver.NamedValue, len(args))
	for i, v := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	rows, err := q.QueryContext(ctx, query, named)
	if err != nil {
		return 0, 0, err
	}
	dest := make([]driver.Value, 2)
	err = rows.Next(dest)
	rows.Close()
	if err != nil {
		return 0, 0, err
	}
	id, _ = dest[0].(int64)
	epoch, _ = dest[1].(int64)
	return id, epoch, nil
}
