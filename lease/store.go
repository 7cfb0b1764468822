package lease

// Every statement on the lease tables (_writer_leases, _writer_queue) but
// their creation (schema.go) and the fencing checks the caller's
// transaction runs (fenceSQL, fenceRefreshSQL in hold.go) is in this file.

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// row is an active _writer_leases row as read back.
type row struct {
	id, epoch, heartbeat, ttl int64
	h                         holder
}

const activeSQL = `SELECT id, holder_id, holder_pid, epoch, heartbeat_at, ttl_ms, coalesce(holder_start, ''), coalesce(holder_slot, 0),
	typeof(holder_id) = 'text' AND typeof(epoch) = 'integer'
FROM main._writer_leases WHERE scope = ? AND lane = ? AND active = 1 LIMIT 2`

// readActive reads the active row of (scope, lane): nil when there is
// none, also when the lease tables were dropped (the claim that follows
// recreates them, see tryImmediate).
func readActive(ctx context.Context, q querier, scope, lane string) (*row, error) {
	rows, err := q.QueryContext(ctx, activeSQL, scope, lane)
	if missingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r := &row{}
		var typed bool
		if err := rows.Scan(&r.id, &r.h.ID, &r.h.PID, &r.epoch, &r.heartbeat, &r.ttl, &r.h.Start, &r.h.Slot, &typed); err != nil {
			return nil, fmt.Errorf("%w: unreadable _writer_leases row: %v", ErrUntrusted, err)
		}
		// The guarded UPDATEs compare holder_id and epoch with what was
		// read: a number stored as text (or the reverse) would never match.
		if !typed {
			return nil, fmt.Errorf("%w: active row of %s/%s has holder_id or epoch of the wrong type", ErrUntrusted, scope, lane)
		}
		if r.epoch <= 0 || r.epoch >= 1<<62 {
			return nil, fmt.Errorf("%w: active row of %s/%s has epoch %d, out of range", ErrUntrusted, scope, lane, r.epoch)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch len(out) {
	case 0:
		return nil, nil
	case 1:
		return out[0], nil
	}
	return nil, fmt.Errorf("%w: two active rows for %s/%s (is ux_writer_leases_active intact?)", ErrUntrusted, scope, lane)
}

// readActive reads the lane's active row (readActive) on the engine's
// connection, trying again after SQLITE_BUSY until ctx ends.
func (l *laneState) readActive(ctx context.Context) (r *row, err error) {
	err = l.e.retryBusy(ctx, func() (err error) {
		r, err = readActive(ctx, l.e.db(), l.scope, l.lane)
		return err
	})
	return r, err
}

func readQueue(ctx context.Context, q querier, scope, lane string) ([]queued, error) {
	rows, err := q.QueryContext(ctx, `SELECT ticket, holder_id, priority, enqueued_at, holder_pid IS NULL,
		coalesce(holder_pid, 0), coalesce(holder_start, ''), coalesce(holder_slot, 0), coalesce(ttl_ms, 0), coalesce(arrival, 0)
		FROM main._writer_queue WHERE scope = ? AND lane = ? ORDER BY ticket`, scope, lane)
	if missingTable(err) {
		return nil, nil // dropped: nobody is queued (see readActive)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queued
	for rows.Next() {
		var w queued
		if err := rows.Scan(&w.ticket, &w.h.ID, &w.priority, &w.enqueued, &w.foreign, &w.h.PID, &w.h.Start, &w.h.Slot, &w.ttl, &w.arrival); err != nil {
			return nil, fmt.Errorf("%w: unreadable _writer_queue row: %v", ErrUntrusted, err)
		}
		w.row = true
		out = append(out, w)
	}
	return out, rows.Err()
}

// grantArgs says how grantTo makes a waiter the holder.
type grantArgs struct {
	// prev is the active row being handed over or reclaimed, rewritten in
	// place; nil reuses the newest released row, or inserts one.
	prev *row
	// dequeue removes the waiter's queue rows (it may have some).
	dequeue bool
	// ifQueueEmpty grants only if the lane's queue has no row and no row
	// of the lane has a higher epoch than prev (with prev only;
	// errLostRow otherwise, as when prev changed).
	ifQueueEmpty bool
	// handOff says that prev is the grant this process holds, handed on
	// (handoff.go): the only grant that counts on from prev's epoch
	// without the clock floor (takeoverFloor).
	handOff bool
}

// grantFields are the columns a grant sets, with grantTo's arguments:
// ?3 holder id, ?4 pid, ?5 now (ms), ?6 TTL (ms), ?7 start, ?8 slot.
const grantFields = `holder_id = ?3, holder_pid = ?4, acquired_at = ?5, heartbeat_at = ?5, ttl_ms = ?6,
		reentrancy_depth = 1, active = 1, holder_start = ?7, holder_slot = ?8`

// holderValues returns h's columns as a lease row stores them: its TTL in
// milliseconds (the engine's when ttl ≤ 0), and its slot and start time,
// nil (NULL) when unknown.
func (l *laneState) holderValues(h holder, ttl int64) (int64, any, any) {
	if ttl <= 0 {
		ttl = l.e.opts.TTL.Milliseconds()
	}
	var slot, start any
	if h.Slot > 0 {
		slot = h.Slot
	}
	if h.Start != "" {
		start = h.Start
	}
	return ttl, slot, start
}

// grantTo makes h (a waiter, possibly this process) the holder of the lane
// with the next epoch; the caller is inside BEGIN IMMEDIATE. When a.prev
// is set, that row is rewritten in place, guarded by its holder and epoch
// (errLostRow if it changed); otherwise the newest released row is reused,
// or a row inserted. Either way one row per lane carries the high-water
// epoch, so epochs never go back and the table does not grow. Every grant
// but a hand-off (a.handOff) takes at least epochMemory.floor
// (takeoverFloor), so that a lane whose rows were deleted (or whose tables
// were dropped) does not count again from 1, and one whose rows came back
// with a restored or copied file does not count on from them.
func (l *laneState) grantTo(ctx context.Context, c *sql.Conn, h holder, ttl int64, a grantArgs) (*grant, error) {
	prev := a.prev
	now := l.e.nowMS()
	ttl, slot, start := l.holderValues(h, ttl)
	const fields = grantFields
	// next is the lane's highest epoch + 1; floor is ?12 (takeoverFloor).
	const next = `(SELECT min(coalesce(max(epoch), 0), 4611686018427387903) FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND typeof(epoch) = 'integer') + 1`
	const set = fields + `, epoch = max(` + next + `, ?12)`
	args := []any{l.scope, l.lane, h.ID, h.PID, now, ttl, start, slot}
	floor := l.takeoverFloor(a.handOff)
	var g grant
	var err error
	if prev != nil {
		guard := ""
		if a.ifQueueEmpty {
			guard = ` AND NOT EXISTS (SELECT 1 FROM main._writer_queue WHERE scope = ?1 AND lane = ?2)`
		}
		args = append(args, prev.id, prev.h.ID, prev.epoch, floor)
		// The common case: no row of the lane carries a higher epoch than
		// prev, so the next one is prev's + 1. Checked in the statement,
		// which is several times cheaper than the max() subquery in SET.
		err = c.QueryRowContext(ctx, `UPDATE main._writer_leases SET `+fields+`, epoch = max(?11 + 1, ?12)
			WHERE id = ?9 AND holder_id = ?10 AND epoch = ?11 AND active = 1`+guard+`
			AND NOT EXISTS (SELECT 1 FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND epoch > ?11)
			RETURNING id, epoch`, args...).Scan(&g.id, &g.epoch)
		if err == sql.ErrNoRows && !a.ifQueueEmpty {
			err = c.QueryRowContext(ctx, `UPDATE main._writer_leases SET `+set+`
				WHERE id = ?9 AND holder_id = ?10 AND epoch = ?11 AND active = 1 RETURNING id, epoch`,
				args...).Scan(&g.id, &g.epoch)
		}
		if err == sql.ErrNoRows {
			return nil, errLostRow
		}
	} else {
		// The newest released row is reused, at the floor (takeoverFloor:
		// the row may have come back with a restored file).
		err = c.QueryRowContext(ctx, `UPDATE main._writer_leases SET `+fields+`, epoch = max(`+next+`, ?9)
			WHERE id = (SELECT id FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND active = 0 ORDER BY epoch DESC LIMIT 1)
			RETURNING id, epoch`, append(args, l.epochs.floor(l.e.clock.Now()))...).Scan(&g.id, &g.epoch)
		if err == sql.ErrNoRows {
			err = c.QueryRowContext(ctx, `INSERT INTO main._writer_leases
				(scope, lane, holder_id, holder_pid, acquired_at, heartbeat_at, ttl_ms, reentrancy_depth, active, holder_start, holder_slot, epoch)
				VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, 1, 1, ?7, ?8,
					max((SELECT min(coalesce(max(epoch), 0), 4611686018427387903) FROM main._writer_leases WHERE scope = ?1 AND lane = ?2 AND typeof(epoch) = 'integer') + 1, ?9))
				RETURNING id, epoch`, append(args, l.epochs.floor(l.e.clock.Now()))...).Scan(&g.id, &g.epoch)
		}
	}
	if err != nil {
		return nil, err
	}
	if g.epoch <= 0 || g.epoch >= 1<<62 {
		return nil, fmt.Errorf("%w: epoch %d out of range", ErrUntrusted, g.epoch)
	}
	l.epochs.note(g.epoch)
	if a.dequeue {
		if _, err := c.ExecContext(ctx, `DELETE FROM main._writer_queue WHERE scope = ? AND lane = ? AND holder_id = ?`, l.scope, l.lane, h.ID); err != nil {
			return nil, err
		}
	}
	g.at = time.Now()
	return &g, nil
}

// enqueue writes r's queue row unless it has one; enqueued_at is the
// waiter's arrival (r.Enqueued) when it has one that is not in the future.
func enqueue(ctx context.Context, c *sql.Conn, scope, lane string, r registration, now int64) error {
	var arr, slot any
	if r.Arrival > 0 {
		arr = r.Arrival
	}
	if r.Slot > 0 {
		slot = r.Slot
	}
	if r.Enqueued > 0 && r.Enqueued <= now {
		now = r.Enqueued // aging counts from the arrival, not from the write
	}
	_, err := c.ExecContext(ctx, `INSERT INTO main._writer_queue
		(scope, lane, holder_id, priority, enqueued_at, deadline_at, holder_pid, holder_start, holder_slot, ttl_ms, arrival)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
		WHERE NOT EXISTS (SELECT 1 FROM main._writer_queue WHERE scope = ?1 AND lane = ?2 AND holder_id = ?3)`,
		scope, lane, r.ID, r.Priority, now, now+r.TTL, r.PID, r.Start, slot, r.TTL, arr)
	return err
}

func (l *laneState) queueHasOthers(ctx context.Context) bool {
	var n int
	err := l.e.db().QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM main._writer_queue WHERE scope = ? AND lane = ? AND holder_id <> ?)`,
		l.scope, l.lane, l.e.holderID).Scan(&n)
	return err == nil && n == 1
}

// dequeue removes holder id's queue rows of (scope, lane).
func dequeue(ctx context.Context, q querier, scope, lane, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM main._writer_queue WHERE scope = ? AND lane = ? AND holder_id = ?`, scope, lane, id)
	return err
}

// dropTicket removes the queue row ticket (a dead or departed waiter's).
func dropTicket(ctx context.Context, q querier, ticket int64) error {
	_, err := q.ExecContext(ctx, `DELETE FROM main._writer_queue WHERE ticket = ?`, ticket)
	return err
}

// releaseRow frees the active row id if holder id still holds it at
// epoch: errLostRow otherwise.
func releaseRow(ctx context.Context, q querier, rowID int64, holderID string, epoch, nowMS int64) error {
	res, err := q.ExecContext(ctx, `UPDATE main._writer_leases SET active = 0, reentrancy_depth = 0, heartbeat_at = ?
		WHERE id = ? AND holder_id = ? AND epoch = ? AND active = 1`, nowMS, rowID, holderID, epoch)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostRow
	}
	return nil
}

// beatRow refreshes the heartbeat and depth of the active row id if
// holder id still holds it at epoch: errLostRow otherwise.
func beatRow(ctx context.Context, q querier, rowID int64, holderID string, epoch int64, depth int, nowMS int64) error {
	res, err := q.ExecContext(ctx, `UPDATE main._writer_leases SET heartbeat_at = ?, reentrancy_depth = ?
		WHERE id = ? AND holder_id = ? AND epoch = ? AND active = 1`, nowMS, depth, rowID, holderID, epoch)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostRow
	}
	return nil
}

// freeRow frees the active row id at epoch, whoever holds it (Break),
// marking it broken (brokenDepth) for the holder it fences.
func freeRow(ctx context.Context, q querier, rowID, epoch int64) error {
	_, err := q.ExecContext(ctx, `UPDATE main._writer_leases SET active = 0, reentrancy_depth = ? WHERE id = ? AND epoch = ? AND active = 1`,
		brokenDepth, rowID, epoch)
	return err
}

// readLanes lists every (scope, lane, highest epoch) with a row or a
// queue row; a lane with both comes twice.
func readLanes(ctx context.Context, q querier) (*sql.Rows, error) {
	return q.QueryContext(ctx, `SELECT scope, lane, max(epoch) FROM main._writer_leases GROUP BY scope, lane
		UNION SELECT scope, lane, 0 FROM main._writer_queue ORDER BY 1, 2`)
}

// readHeld reads acquired_at and reentrancy_depth of row id.
func readHeld(ctx context.Context, q querier, rowID int64) *sql.Row {
	return q.QueryRowContext(ctx, `SELECT acquired_at, reentrancy_depth FROM main._writer_leases WHERE id = ?`, rowID)
}
