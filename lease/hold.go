package lease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Hold is one caller's share of a lane's lease, from Acquire to Release.
// A Hold obtained while the context already carries a Hold on the same
// (engine, scope, lane) is re-entrant: it shares the outer grant and epoch
// and only counts depth. Release is keyed by the Hold itself, so releasing
// twice is a no-op and can never free another caller's share.
type Hold struct {
	l        *laneState
	g        *grant // nil when degraded
	root     *Hold  // nil for a first acquisition
	gateHeld bool
	claimed  bool // this acquisition claimed the row (vs. reusing a lingering one)
	begun    bool // Acquire opened the caller's transaction and confirmed the grant in it (Begun)
	// inTurn: Fencing.Pass found this hold's last commit inside the
	// grant's slice, so the turn goes on past its release (see release).
	inTurn   atomic.Bool
	released atomic.Bool
	at       time.Time // when Acquire returned it, while an Observer is registered (HoldEnded)
}

// Scope and Lane name the lane this Hold is on.
func (h *Hold) Scope() string { return h.l.scope }

// Lane is the lane name.
func (h *Hold) Lane() string { return h.l.lane }

// Epoch is the fencing token of the grant (strictly increasing per
// (scope, lane) in the file, never reused), or 0 for a degraded grant.
func (h *Hold) Epoch() int64 {
	if h.g == nil {
		return 0
	}
	return h.g.epoch
}

// Degraded reports a grant made without the lease (mode local, after the
// wait bound): the work runs unleased and unfenced. A degraded Hold never
// satisfies Held.
func (h *Hold) Degraded() bool { return h.g == nil }

// Claimed reports whether this acquisition had to claim the row through
// the queue (another process held or wanted the lane recently), as opposed
// to reusing a row this process still held. Callers use it to expect
// competition for SQLite's write lock.
func (h *Hold) Claimed() bool { return h.claimed }

// Begun reports that Acquire opened the caller's write transaction on
// AcquireOptions.Confirm (BEGIN IMMEDIATE) and confirmed the grant inside
// it: the transaction is open, and the caller must not begin another. Its
// FenceBegin then passes without reading the row again.
func (h *Hold) Begun() bool { return h.begun }

// Reentrant reports whether this Hold re-entered an outer one (WithHold)
// rather than acquiring the lane itself.
func (h *Hold) Reentrant() bool { return h.root != nil }

// Held reports, from memory and without I/O, whether this Hold still
// believes it holds the lease: not released, not degraded, not known lost.
// Check asks the database.
func (h *Hold) Held() bool {
	return !h.released.Load() && h.g != nil && !h.g.lost.Load()
}

// Check asks the database whether (holder, epoch) is still the active row
// of the lane: nil, or an *Error wrapping ErrLost (the grant is then marked
// lost, so every later fenced commit fails too). One indexed point read on
// the engine's connection.
func (h *Hold) Check(ctx context.Context) error {
	if h.g == nil {
		return h.l.e.errf("check", h.l.scope, h.l.lane, ErrUnavailable, "degraded grant holds no lease")
	}
	if h.l.e.opts.MemoryOnly {
		return nil
	}
	if h.g.lost.Load() {
		return h.lostErr("check")
	}
	if h.g.inline.Load() {
		// Claimed inside the caller's open transaction (Inline), which
		// nobody else sees yet: that transaction's fencing reads decide.
		return nil
	}
	if err := h.l.e.fault("check"); err != nil {
		return err
	}
	var one int
	err := h.l.e.retryBusy(ctx, func() error {
		return h.l.e.db().QueryRowContext(ctx, fenceSQL, h.l.scope, h.l.lane, h.l.e.holderID, h.g.epoch).Scan(&one)
	})
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) || missingTable(err) {
			h.l.markLost(h.g, h.l.whyGone(ctx, dbReader(h.l.e.db()), h.g))
			return h.lostErr("check")
		}
		return err
	}
	return nil
}

// fenceSQL is the fencing check Fence runs: it returns one row exactly when
// (holder_id, epoch) is the active row of (scope, lane). Its arguments are
// scope, lane, holder id, epoch.
const fenceSQL = `SELECT 1 FROM main._writer_leases WHERE scope = ? AND lane = ? AND active = 1 AND holder_id = ? AND epoch = ?`

// Fence runs the fencing check on q — the caller's connection, inside the
// write transaction it is about to commit — so that the check and the
// commit are atomic: nil means the commit may proceed; an *Error wrapping
// ErrLost means it must roll back. A degraded or in-memory grant always
// passes (it has nothing to fence). Fence alone cannot tell a row this very
// transaction removed (a user dropping the lease tables) from a lost lease:
// callers that can run a check right after their BEGIN IMMEDIATE use
// FenceBegin and Fencing.Check instead. The checks send q the same few
// query texts for every Hold of an Engine (fenceSQL, fenceRefreshSQL under
// StealAfterTTL, and goneSQL after a failed check), so q may keep each
// prepared once per connection.
func (h *Hold) Fence(ctx context.Context, q driver.QueryerContext) error {
	return (&Fencing{h: h}).check(ctx, q, false)
}

// Fencing is the fencing of one write transaction made under a Hold: the
// check right after its BEGIN IMMEDIATE (FenceBegin) and the one just
// before its COMMIT (Check), both on the transaction's own connection. It
// lets a transaction commit that removed the lease row or the lease tables
// itself (golang-migrate's Drop, an application emptying every table),
// which Fence alone would take for a lost lease.
//
// Why that is safe. FenceBegin runs after BEGIN IMMEDIATE returned and
// before any statement of the caller. From then until the transaction ends
// its connection holds SQLite's write lock on the file (RESERVED in
// rollback-journal mode, the WAL write lock in WAL mode; in a shared cache
// the cache's one write transaction), so no other connection — no other
// process, no Break, not the engine's own connection — can change the
// database; the lock is given up only when the transaction ends. So when
// FenceBegin found (holder, epoch) active, every difference Check sees
// before COMMIT was made by this transaction: nobody else can have been
// granted the lane meanwhile, and the commit may go ahead. The exception
// holds only while the transaction is still open (Check's open argument):
// a COMMIT or ROLLBACK inside the caller's SQL, or SQLite's automatic
// rollback after an error such as SQLITE_FULL, ends the transaction and
// frees the lock, and then a missing row is a loss as before. After such a
// commit the grant is over (Committed): the lane's row is gone, and the
// next write claims the lane again, at a higher epoch (see epochMemory.floor).
type Fencing struct {
	h     *Hold
	begun bool  // FenceBegin found (holder, epoch) active
	lost  error // FenceBegin's finding when it did not (an *Error wrapping ErrLost)
	self  bool  // Check found the row removed or changed by this transaction
	// dv is the connection's PRAGMA data_version when FenceBegin found the
	// row active: SQLite changes it only when another connection commits,
	// which none can while this write transaction is open. Check compares
	// it, so a caller that ran COMMIT and BEGIN itself in between (another
	// connection having committed meanwhile) is not taken for the
	// transaction FenceBegin checked.
	dv int64
}

// FenceBegin runs the fencing check on q — the caller's connection — right
// after the caller's BEGIN IMMEDIATE and before any of its statements, and
// returns the transaction's Fencing. A Hold that has nothing to fence
// (degraded, in memory) returns a Fencing whose Check always passes. Lost
// reports that (holder, epoch) was not the active row at BEGIN (the grant
// is then marked lost, so a caller that has run nothing yet may roll back
// and acquire again); err is an error of q (the Fencing then fails its
// Check with it).
func (h *Hold) FenceBegin(ctx context.Context, q driver.QueryerContext) (f *Fencing, lost bool, err error) {
	f = &Fencing{h: h}
	if h.g == nil || h.l.e.opts.MemoryOnly {
		f.begun = true
		return f, false, nil
	}
	if h.begun {
		// Confirmed in this very transaction, under its write lock, by
		// Acquire: only the data version is left to read.
		h.begun = false
		dv, err := readDataVersion(ctx, q)
		if err != nil {
			f.lost = err
			return f, false, err
		}
		f.begun, f.dv = true, dv
		return f, false, nil
	}
	if h.g.lost.Load() {
		f.lost = h.lostErr("commit")
		return f, true, nil
	}
	held, dv, err := h.fenceRead(ctx, q, false)
	switch {
	case err != nil && !missingTable(err):
		f.lost = err
		return f, false, err
	case !held:
		h.l.markLost(h.g, h.l.whyGone(ctx, connReader(q), h.g))
		f.lost = h.lostErr("commit")
		return f, true, nil
	}
	f.begun, f.dv = true, dv
	return f, false, nil
}

// Check runs the fencing check on q just before COMMIT: nil means the
// commit may proceed; an *Error wrapping ErrLost means it must roll back.
// open reports that the transaction FenceBegin saw begin is still open on
// q (not ended by a COMMIT or ROLLBACK of the caller's, or by SQLite).
func (f *Fencing) Check(ctx context.Context, q driver.QueryerContext, open bool) error {
	if !open && f.h.g != nil && f.h.g.inline.Load() {
		// The caller's SQL (or SQLite) ended the transaction that claimed
		// the lane: its COMMIT commits nothing and fails with SQLite's own
		// error, and Release settles the grant by reading the row
		// (endInline), whether that transaction committed it or not.
		return nil
	}
	if f.lost != nil {
		if le := (*Error)(nil); errors.As(f.lost, &le) {
			f.h.l.e.stats.Fenced.Add(1)
		}
		return f.lost
	}
	return f.check(ctx, q, f.begun && open)
}

// check is the check before COMMIT; begun says that FenceBegin found the
// row active in this same, still open, transaction.
func (f *Fencing) check(ctx context.Context, q driver.QueryerContext, begun bool) error {
	h := f.h
	if h.g == nil || h.l.e.opts.MemoryOnly {
		return nil
	}
	if h.g.lost.Load() {
		h.l.e.stats.Fenced.Add(1)
		return h.lostErr("commit")
	}
	if err := h.l.e.fault("fence"); err != nil {
		return err
	}
	if h.l.e.os.holes.dropCommitRead && begun {
		return nil // issue 24 item 3's experiment (holes)
	}
	held, dv, err := h.fenceRead(ctx, q, h.l.e.opts.StealAfterTTL)
	if begun && err != nil {
		// The read failed (the lease table dropped, say) and brought no
		// data version: read it alone. The transaction's own change is
		// only ever taken on that proof; without it the check fails.
		if dv, err = readDataVersion(ctx, q); err != nil {
			return err
		}
	}
	switch {
	case held:
		return nil
	case begun && dv != f.dv:
		// Another connection committed since FenceBegin: the transaction
		// being committed is not the one it checked (the caller ran
		// COMMIT and BEGIN in between), so the changed row is not this
		// transaction's own change.
	case begun:
		// Removed or changed by this very transaction (see Fencing) —
		// the table dropped, the row deleted or rewritten, or the table
		// recreated with other columns (the read then fails).
		f.self = true
		return nil
	case err != nil && !missingTable(err):
		return err
	}
	h.l.markLost(h.g, h.l.whyGone(ctx, connReader(q), h.g))
	h.l.e.stats.Fenced.Add(1)
	return h.lostErr("commit")
}

// Committed tells the Fencing that its transaction committed. When the
// transaction removed or changed the lease row itself, the grant ends here
// (the lane is no longer this process's: the next write claims it again,
// recreating the tables if they were dropped).
func (f *Fencing) Committed() {
	if f.self {
		f.h.l.endGrant(f.h.g)
	}
}

// fenceRead runs the fencing query on q: held reports that (holder, epoch)
// is the active row of the lane. A missing lease table is an error
// (missingTable). With refresh (the check before COMMIT under the
// TTL-steal policy) it also refreshes heartbeat_at: once per transaction,
// the one write of the lease row a user's update hook on that connection
// sees.
func (h *Hold) fenceRead(ctx context.Context, q driver.QueryerContext, refresh bool) (held bool, dv int64, err error) {
	if h.l.e.os.holes.skipFence {
		return true, 0, nil // the simulation's seeded bug (holes)
	}
	if dv, err = readDataVersion(ctx, q); err != nil {
		return false, 0, err
	}
	query, args := fenceSQL, h.fenceArgs()
	if refresh {
		// Under the TTL-steal policy a long transaction would end with a
		// stale heartbeat; refresh it in the same transaction as the data.
		query, args = fenceRefreshSQL, []driver.NamedValue{
			{Ordinal: 1, Value: h.l.e.nowMS()}, {Ordinal: 2, Value: h.l.scope}, {Ordinal: 3, Value: h.l.lane},
			{Ordinal: 4, Value: h.l.e.holderID}, {Ordinal: 5, Value: h.g.epoch},
		}
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil {
		return false, 0, err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	err = rows.Next(dest)
	rows.Close()
	if err == io.EOF {
		return false, dv, nil
	}
	return err == nil, dv, err
}

// readDataVersion returns the connection's data version (see Fencing.dv)
// with the statement PRAGMA main.data_version: on the caller's connection
// nothing may stand in for it, and a table or view named
// pragma_data_version in TEMP, main or an attached database would stand
// in for the table-valued pragma_data_version (even written
// main.pragma_data_version), reading the same version at both checks of a
// transaction the caller ended and began again.
func readDataVersion(ctx context.Context, q driver.QueryerContext) (int64, error) {
	rows, err := q.QueryContext(ctx, "PRAGMA main.data_version", nil)
	if err != nil {
		return 0, err
	}
	dest := make([]driver.Value, 1)
	err = rows.Next(dest)
	rows.Close()
	if err != nil {
		return 0, err
	}
	dv, _ := dest[0].(int64)
	return dv, nil
}

// fenceArgs are fenceSQL's arguments for h's grant, built once per grant
// (they do not change; the driver only reads them).
func (h *Hold) fenceArgs() []driver.NamedValue {
	if p := h.g.fenceArgs.Load(); p != nil {
		return *p
	}
	args := []driver.NamedValue{
		{Ordinal: 1, Value: h.l.scope}, {Ordinal: 2, Value: h.l.lane},
		{Ordinal: 3, Value: h.l.e.holderID}, {Ordinal: 4, Value: h.g.epoch},
	}
	h.g.fenceArgs.Store(&args)
	return args
}

func (h *Hold) lostErr(op string) error {
	why := h.g.why.Load()
	reason := "the lane is no longer this holder's"
	if why != nil {
		reason = *why
	}
	e := h.l.e.errf(op, h.l.scope, h.l.lane, ErrLost, reason)
	e.Epoch = h.g.epoch
	return e
}

// Release ends this Hold. The first Release of a first acquisition lets
// the next writer of the lane in this process go, and hands the row to a
// waiting process (or lets it linger while nobody waits). Further calls do
// nothing.
func (h *Hold) Release() {
	if !h.released.CompareAndSwap(false, true) {
		return
	}
	l := h.l
	if h.root != nil {
		l.mu.Lock()
		l.held.unnestLocked()
		l.mu.Unlock()
		return
	}
	if h.g != nil && !h.at.IsZero() && observed() {
		outcome := OutcomeReleased
		if h.g.lost.Load() {
			outcome = OutcomeLost
		}
		l.emit(HoldEnded, time.Since(h.at), outcome)
	}
	l.release(h)
}

type holdsKey struct{}

type holdNode struct {
	h    *Hold
	next *holdNode
}

// WithHold returns a context carrying h, so that Acquire with that context
// (and every leased statement the driver runs with it) re-enters h instead
// of waiting for it.
func WithHold(ctx context.Context, h *Hold) context.Context {
	next, _ := ctx.Value(holdsKey{}).(*holdNode)
	return context.WithValue(ctx, holdsKey{}, &holdNode{h: h, next: next})
}

// holdFrom returns the live Hold the context carries for (e, scope, lane),
// or nil.
func holdFrom(ctx context.Context, e *Engine, scope, lane string) *Hold {
	for n, _ := ctx.Value(holdsKey{}).(*holdNode); n != nil; n = n.next {
		h := n.h
		if h.root != nil {
			h = h.root
		}
		if h.l.e == e && h.l.scope == scope && h.l.lane == lane && !h.released.Load() {
			return h
		}
	}
	return nil
}

// fenceRefreshSQL is the fencing check under the TTL-steal policy: it also
// refreshes heartbeat_at, inside the caller's transaction.
const fenceRefreshSQL = `UPDATE main._writer_leases SET heartbeat_at = ? WHERE scope = ? AND lane = ? AND active = 1 AND holder_id = ? AND epoch = ? RETURNING 1`
