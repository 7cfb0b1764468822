package lease

// How a claim ends without a grant (its context ended, its wait bound
// passed, or a statement failed): it leaves the queue, and keeps a grant
// that arrived meanwhile when it may.

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
)

// abandon leaves the queue after the context ended or the wait bound was
// reached. Cleanup runs on the engine's connection, detached from the
// caller's context. If the lane was handed to us meanwhile, a wait-bound
// abandon keeps it (the grant wins); a cancelled caller leaves it to the
// linger watcher, which passes it on (keepLate: the caller's Acquire
// leaves the gate, which starts the watcher; while the engine closes, no
// watcher runs, and the lane is handed on at once). A grant committed
// after quit looked is found by the lane's settle (settle.go).
func (c *claimRun) abandon(ctx context.Context, cause error) (*grant, error) {
	l := c.l
	c.unlockWant() // first: see leaveQueue
	g, err := c.quit(ctx)
	if err != nil {
		return nil, err
	}
	if g != nil {
		if cause == errWaitBound {
			return g, nil
		}
		l.keepLate(g)
	}
	return nil, cause
}

func (c *claimRun) abandonWith(ctx context.Context, cause error) (*grant, error) {
	l := c.l
	c.unlockWant() // first: see leaveQueue
	g, err := c.quit(ctx)
	if err != nil && !(WriteRefused(err) && WriteRefused(cause)) {
		// (A file that refused the claim refuses its cleanup too: the
		// claim wrote no queue row there.)
		l.e.logf(slog.LevelWarn, "cleolease: queue cleanup failed", "scope", l.scope, "lane", l.lane, "err", err)
	}
	if g != nil {
		// Handed to us meanwhile: the grant wins (dropping it would leave
		// the lane with a live process that no longer waits for it).
		return g, nil
	}
	var le *Error
	if errors.As(cause, &le) {
		return nil, cause
	}
	return nil, l.e.errf("acquire", l.scope, l.lane, cause, "")
}

// quit ends the claim's wait after its want byte was released, and
// reports a grant if the lane was handed to this process meanwhile. A
// claim that wrote a queue row leaves the queue (leaveQueue), under
// SQLite's write lock: that settles the lane. One that only registered
// has no row to remove, and must not wait for the write lock, which the
// holder's own transaction may keep for long (the caller's deadline has
// passed): a read finds a grant committed before the want byte was
// released; a grant whose hand-off tested the byte just before, and
// commits later, is found by the settle that the claim's end starts
// (c.unsettled, with the row read: settle.go), whether or not its grant
// datagram ever arrives. So does one that a failed leaveQueue left.
func (c *claimRun) quit(ctx context.Context) (*grant, error) {
	l := c.l
	if c.wroteRow {
		g, err := l.leaveQueue(ctx, c.handedToUs)
		c.unsettled, c.quitSeen = err != nil, rowRef{}
		return g, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	r, err := l.readActive(rctx)
	// Lets a test commit a grant between this read and the claim's end;
	// nothing to inject.
	_ = l.e.fault("quit")
	switch {
	case err != nil:
		c.unsettled, c.quitSeen = true, rowRef{} // the row is unknown: the settle takes the write lock
	case r == nil || r.h.ID != l.e.holderID || !c.handedToUs(r.epoch):
		// (A row that names this process but was not handed to this
		// claim is the settle's to retire.)
		c.unsettled, c.quitSeen = true, refOf(r)
	default:
		return &grant{id: r.id, epoch: r.epoch, at: time.Now()}, nil
	}
	return nil, nil
}

// leaveQueue removes this process's queue row of the lane and reports a
// grant if the lane was handed to it meanwhile (not one the lane already
// records as the row held, which its own hand-off passes on: the
// watcher's, or Close's). A row that names this process at an epoch that
// fresh refuses was not handed to it (a restored or copied file's): it is
// released in the same transaction (retireRow), never used. The caller has released its want byte first: a
// holder tests it inside its hand-off transaction, so either the hand-off
// sees this process no longer waiting, or it committed the grant before
// this transaction, which then finds it. Transient failures (I/O error,
// disk full, busy) are retried for up to 5s: a queue row left behind by a
// live process that no longer waits could later be handed the lane, and
// keep it. A file that refuses writes (WriteRefused: a LiteFS replica) is
// not retried: it refused the claim that would have written the row.
func (l *laneState) leaveQueue(ctx context.Context, fresh func(epoch int64) bool) (g *grant, err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	bo := backoff{min: 100 * time.Microsecond, max: 50 * time.Millisecond}
	for {
		g, err = l.tryLeaveQueue(cctx, fresh)
		c, ok := sqlbase.Code(err)
		if err == nil || !ok || !transientCodes[c.Code] || WriteRefused(err) || bo.sleep(cctx, nil) != nil {
			return g, err
		}
	}
}

// transientCodes are the SQLite result codes leaveQueue retries.
var transientCodes = map[int]bool{sqlbase.IOErr: true, sqlbase.Full: true, sqlbase.Busy: true,
	sqlbase.Locked: true, sqlbase.Protocol: true}

func (l *laneState) tryLeaveQueue(cctx context.Context, fresh func(epoch int64) bool) (*grant, error) {
	var g *grant
	err := l.e.immediateOp(cctx, "dequeue", func(cctx context.Context, c *sql.Conn) error {
		g = nil // this body runs again after SQLITE_BUSY
		r, err := l.dequeueRead(cctx, c)
		if err != nil {
			return err
		}
		if r != nil && r.h.ID == l.e.holderID && l.currentRow() == nil {
			if !fresh(r.epoch) {
				return l.retireRow(cctx, c, r)
			}
			g = &grant{id: r.id, epoch: r.epoch, at: time.Now()}
		}
		return nil
	})
	return g, err
}
