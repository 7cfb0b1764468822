// Package chaoswriter is the writer process of the chaos ledger (package
// chaos, ledger_test.go): one process appending entries to the ledger
// table under the lane main/ledger through a cleolease driver, over any
// base. The chaos tests run it in their own test binary (go-sqlite3); the
// cgo-free bases' modules build it into a program of their own
// (modernc/internal/chaosworker, ncruces/internal/chaosworker), so that
// one ledger can have writers of every base.
//
// Environment: EnvDSN (the DSN, in the base's dialect), EnvWriter (its
// index), EnvGoroutines (writing goroutines), EnvLog (the ack log),
// EnvSeed, EnvGiveUp. Output on stdout: "P <pid>", "H <holder id>", one
// "A" per acknowledged entry; the ack log holds every line the checks
// read (see package chaos).
package chaoswriter

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/writer"
)

// The environment of the ledger's processes. EnvRole selects the role a
// re-executed chaos test binary plays (its TestMain then runs the role
// instead of the tests); EnvPath is the database file of the breaker and
// flooder roles; the others are the writer's (see the package comment).
const (
	EnvRole       = "CLEOLEASE_CHAOS_ROLE"
	EnvDSN        = "CLEOLEASE_CHAOS_DSN"
	EnvPath       = "CLEOLEASE_CHAOS_PATH"
	EnvWriter     = "CLEOLEASE_CHAOS_WRITER"
	EnvGoroutines = "CLEOLEASE_CHAOS_GOROUTINES"
	EnvLog        = "CLEOLEASE_CHAOS_LOG"
	EnvSeed       = "CLEOLEASE_CHAOS_SEED"
	EnvGiveUp     = "CLEOLEASE_CHAOS_GIVEUP" // "1": some operations get a short deadline (the giveup fault)
)

// Scope and Lane are the lane every writer of the ledger writes under.
const (
	Scope = "main"
	Lane  = "ledger"
)

// Schema creates the ledger table the writers append to.
const Schema = `CREATE TABLE IF NOT EXISTS ledger (
	id INTEGER PRIMARY KEY AUTOINCREMENT, -- commit order
	seq INTEGER NOT NULL,                 -- previous entry's seq + 1, computed inside the write
	stream TEXT NOT NULL,                 -- writer-local stream: w<i>g<j>
	n INTEGER NOT NULL,                   -- position in the stream
	uid TEXT NOT NULL,                    -- stream-n: the writer-local unique id
	pid INTEGER NOT NULL,                 -- the writing process
	epoch INTEGER NOT NULL,               -- the epoch the writer believes it writes under
	row_epoch INTEGER,                    -- epoch of the active lease row, read by the INSERT itself
	row_pid INTEGER,                      -- holder pid of that row
	mode TEXT NOT NULL,                   -- tx, exec, lease-tx, lease-exec
	at INTEGER                            -- wall clock (µs, SQLite's millisecond resolution) when the INSERT ran
);
CREATE INDEX IF NOT EXISTS ledger_stream ON ledger(stream, n);`

// insertSQL appends one entry. ?5 is the epoch the writer believes in; NULL
// takes the active row's. The LEFT JOIN keeps the entry even when no row is
// active, so the checker can see such a write.
const insertSQL = `INSERT INTO ledger (seq, stream, n, uid, pid, epoch, row_epoch, row_pid, mode, at)
SELECT coalesce((SELECT seq FROM ledger ORDER BY id DESC LIMIT 1), 0) + 1,
	?1, ?2, ?3, ?4, coalesce(?5, l.epoch, -1), l.epoch, l.holder_pid, ?6,
	CAST(unixepoch('subsec') * 1000000 AS INTEGER)
FROM (SELECT 1) LEFT JOIN _writer_leases l ON l.scope = ?7 AND l.lane = ?8 AND l.active = 1`

// Error classes as the writers log them. AllowedClass lists the ones a
// writer may legitimately see under the nemesis.
const (
	ClassLost        = "lost"        // writer.ErrLeaseLost: broken, stolen
	ClassUnavailable = "unavailable" // writer.ErrLeaseUnavailable: a paused holder kept the lane past _lease_wait
	ClassCtx         = "ctx"         // the operation's own deadline
	ClassLocked      = "locked"      // SQLITE_BUSY / SQLITE_LOCKED: never allowed
	ClassDegraded    = "degraded"    // a degraded grant in mode require: never allowed
	ClassPhantom     = "phantom"     // an operation that failed for sure, yet its entry committed
	ClassOther       = "other"
)

// AllowedClass is the set of error classes a writer may see under the
// nemesis; any other fails the run.
var AllowedClass = map[string]bool{ClassLost: true, ClassUnavailable: true, ClassCtx: true}

// Classify names the class of an error a write returned; opCtx is the
// operation's context.
func Classify(opCtx context.Context, err error) string {
	switch {
	case errors.Is(err, writer.ErrLeaseLost):
		return ClassLost
	case errors.Is(err, writer.ErrLeaseUnavailable):
		return ClassUnavailable
	case sqlbase.IsBusy(err), strings.Contains(err.Error(), "database is locked"), strings.Contains(err.Error(), "database table is locked"):
		return ClassLocked
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ClassCtx
	case isInterrupt(err):
		// ncruces reports the end of a context (the operation's, or a
		// held Lease's, which ends when the lease is lost) as SQLite's
		// SQLITE_INTERRUPT; SQLite has rolled the transaction back.
		return ClassCtx
	case errors.Is(err, sql.ErrTxDone) && opCtx.Err() != nil:
		// database/sql rolled the transaction back when its context ended.
		return ClassCtx
	}
	return ClassOther
}

// isInterrupt reports SQLite's SQLITE_INTERRUPT from any base.
func isInterrupt(err error) bool {
	c, ok := sqlbase.Code(err)
	return ok && c.Code == sqlbase.Interrupt
}

// definite reports whether an error of this class guarantees that the
// operation's entry did not commit. A context error is definite for an
// operation of the giveup fault (giveUp): its deadline ends the claim, or
// the write before its COMMIT (which cleolease runs without the context);
// for the others it stays ambiguous, as it always was here.
func definite(class string, giveUp bool) bool {
	return class == ClassLost || class == ClassUnavailable || (giveUp && class == ClassCtx)
}

// ledgerWriter is one writer process.
type ledgerWriter struct {
	db     *sql.DB
	idx    int
	pid    int64
	giveUp bool       // the giveup fault is on: some operations get a 0–20 ms deadline
	mu     sync.Mutex // serialises log writes; guards quietUntil
	// quietUntil: after an operation of the giveup fault gave up, the
	// process sometimes starts no operation until then (goQuiet).
	quietUntil time.Time
	log        *os.File
	out        *bufio.Writer
	stop       chan struct{}
}

// Main is the body of a writer process over the cleolease driver d (any
// base's): it opens the DSN of EnvDSN through d, writes its streams until
// its stdin closes, and returns the exit status. See the package comment
// for its environment and its output.
func Main(d driver.DriverContext) int {
	idx, _ := strconv.Atoi(os.Getenv(EnvWriter))
	gs, _ := strconv.Atoi(os.Getenv(EnvGoroutines))
	seed, _ := strconv.ParseUint(os.Getenv(EnvSeed), 10, 64)
	if gs <= 0 {
		gs = 2
	}
	logf, err := os.OpenFile(os.Getenv(EnvLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer: ack log:", err)
		return 2
	}
	defer logf.Close()
	// sql.Open("cleolease", dsn) does exactly this; the connector is kept
	// to learn the engine's holder id, which names this process's
	// doorbell (the flood fault's target).
	conn, err := d.OpenConnector(os.Getenv(EnvDSN))
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer: open:", err)
		return 2
	}
	db := sql.OpenDB(conn)
	w := &ledgerWriter{db: db, idx: idx, pid: int64(os.Getpid()), giveUp: os.Getenv(EnvGiveUp) == "1",
		log: logf, out: bufio.NewWriter(os.Stdout), stop: make(chan struct{})}
	w.line(fmt.Sprintf("P %d\n", w.pid), false)
	go func() { // the test closes stdin to stop the writer
		io.Copy(io.Discard, os.Stdin)
		close(w.stop)
	}()
	if id := w.holderID(conn); id != "" {
		w.line("H "+id+"\n", false)
		w.mu.Lock()
		w.out.WriteString("H " + id + "\n")
		w.out.Flush()
		w.mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.stream(g, rand.New(rand.NewPCG(seed, uint64(idx*1000+g))))
		}()
	}
	wg.Wait()
	if st, err := writer.Stats(context.Background(), db); err == nil {
		b, _ := json.Marshal(st)
		w.line("S "+string(b)+"\n", false)
	}
	if err := db.Close(); err != nil {
		w.line(fmt.Sprintf("E %s close %q\n", ClassOther, err.Error()), false)
	}
	return 0
}

// holderID opens the connector's lease engine (its first connection) and
// returns its holder id, retrying as lastN does; "" once told to stop.
func (w *ledgerWriter) holderID(conn driver.Connector) string {
	c, ok := conn.(interface{ Engine() *lease.Engine })
	if !ok {
		return ""
	}
	for !w.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.db.PingContext(ctx)
		cancel()
		if err == nil {
			if e := c.Engine(); e != nil {
				return e.HolderID()
			}
			return ""
		}
		w.logErr(Classify(ctx, err), "open", err)
	}
	return ""
}

// line appends s to the ack log; an acknowledgement is fsynced and then
// reported on stdout.
func (w *ledgerWriter) line(s string, ack bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.log.WriteString(s); err != nil {
		fmt.Fprintln(os.Stderr, "writer: ack log:", err)
		os.Exit(3)
	}
	if ack {
		if err := w.log.Sync(); err != nil {
			fmt.Fprintln(os.Stderr, "writer: fsync ack log:", err)
			os.Exit(3)
		}
		w.out.WriteString("A\n")
		w.out.Flush()
	}
}

func (w *ledgerWriter) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// entry is one ledger entry to write.
type entry struct {
	stream string
	n      int64
}

func (e entry) uid() string { return fmt.Sprintf("%s-%d", e.stream, e.n) }

// stream writes entries n = last+1, last+2, … of stream w<idx>g<g> until
// the writer is told to stop, choosing at random how to write each.
func (w *ledgerWriter) stream(g int, rng *rand.Rand) {
	name := fmt.Sprintf("w%dg%d", w.idx, g)
	e := entry{stream: name, n: w.lastN(name) + 1}
	var seq int64
	for !w.stopped() {
		w.awaitQuiet()
		seq++
		giveUp := w.giveUp && rng.IntN(4) == 0
		id := fmt.Sprintf("%d.%d", g, seq)
		switch r := rng.IntN(10); {
		case r < 3:
			e = w.single(e, "tx", id, giveUp, rng)
		case r < 6:
			e = w.single(e, "exec", id, giveUp, rng)
		default:
			e = w.leased(e, id, giveUp, rng)
		}
	}
}

// opTimeout is a random per-operation deadline: some expire while a paused
// holder keeps the lane, most do not. An operation of the giveup fault
// gets 0–20 ms instead: its claim ends mid-wait, at whatever step it had
// reached.
func opTimeout(rng *rand.Rand, giveUp bool) time.Duration {
	if giveUp {
		return time.Duration(rng.Int64N(int64(giveUpMax)))
	}
	return 300*time.Millisecond + time.Duration(rng.Int64N(int64(4*time.Second)))
}

// giveUpMax bounds the deadline of the giveup fault's operations.
const giveUpMax = 20 * time.Millisecond

// goQuiet is the giveup fault's think time: after an operation gave up
// waiting, the whole process sometimes starts no operation for a while,
// as an application that gave up and does not come back at once. A grant
// written for the claim that gave up then stays with a process that is
// not about to claim again, which finds it only if the lease engine does.
// A third of the time it goes quiet, for 0–2 s (so that a grant it missed
// would leave the lane idle past the 1 s bound half of those times).
// Logged as "Q <from µs> <until µs>".
func (w *ledgerWriter) goQuiet(rng *rand.Rand) {
	if rng.IntN(3) != 0 {
		return
	}
	from := time.Now()
	until := from.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
	w.mu.Lock()
	w.quietUntil = maxTime(w.quietUntil, until)
	w.mu.Unlock()
	w.line(fmt.Sprintf("Q %d %d\n", from.UnixMicro(), until.UnixMicro()), false)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// awaitQuiet waits out the process's think time, if any (goQuiet).
func (w *ledgerWriter) awaitQuiet() {
	w.mu.Lock()
	d := time.Until(w.quietUntil)
	w.mu.Unlock()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.stop:
	}
}

// single writes e in one plain transaction or one autocommit Exec.
func (w *ledgerWriter) single(e entry, mode, id string, giveUp bool, rng *rand.Rand) entry {
	ctx, cancel := context.WithTimeout(writer.WithLane(context.Background(), Scope, Lane), opTimeout(rng, giveUp))
	defer cancel()
	o := w.begin(id, mode, giveUp)
	var epoch int64
	var err error
	if mode == "tx" {
		epoch, err = w.writeTx(ctx, e, 0, o)
	} else {
		epoch, err = w.writeExec(ctx, e, 0, o)
	}
	o.end()
	if err != nil {
		if giveUp && !o.granted {
			w.goQuiet(rng)
		}
		return w.failed(ctx, e, mode, giveUp, err)
	}
	w.ack(e, epoch, mode)
	e.n++
	return e
}

// leased writes a batch of entries inside one held Lease, each in its own
// transaction or autocommit Exec, recording Lease.Epoch(). Its op is
// granted when AcquireLease returns and ends its hold when Release does.
func (w *ledgerWriter) leased(e entry, id string, giveUp bool, rng *rand.Rand) entry {
	d := time.Second + time.Duration(rng.Int64N(int64(4*time.Second)))
	if giveUp {
		d = opTimeout(rng, true)
	}
	ctx, cancel := context.WithTimeout(writer.WithLane(context.Background(), Scope, Lane), d)
	defer cancel()
	o := w.begin(id, "lease", giveUp)
	l, err := writer.AcquireLease(ctx, w.db)
	if err != nil {
		o.end()
		w.logErr(Classify(ctx, err), "acquire", err)
		if giveUp {
			w.goQuiet(rng)
		}
		return e
	}
	o.grant(Now())
	defer func() {
		l.Release()
		o.end()
	}()
	if l.Degraded() || l.Epoch() <= 0 {
		w.logErr(ClassDegraded, "acquire", fmt.Errorf("degraded grant (epoch %d) in mode require", l.Epoch()))
		return e
	}
	lctx := l.Context(ctx)
	for range 1 + rng.IntN(6) {
		if w.stopped() {
			break
		}
		if rng.IntN(5) == 0 {
			if err := l.Check(lctx); err != nil {
				w.logErr(Classify(ctx, err), "check", err)
				break
			}
		}
		var epoch int64
		mode := "lease-tx"
		if rng.IntN(2) == 0 {
			epoch, err = w.writeTx(lctx, e, l.Epoch(), nil)
		} else {
			mode = "lease-exec"
			epoch, err = w.writeExec(lctx, e, l.Epoch(), nil)
		}
		if err != nil {
			return w.failed(ctx, e, mode, giveUp, err)
		}
		w.ack(e, epoch, mode)
		e.n++
	}
	return e
}

// writeTx writes e in a BeginTx transaction. The epoch recorded is
// leaseEpoch, or (0) the active row's, read in the same transaction. o,
// unless nil (a write inside a Lease), learns that the lane was granted
// when BeginTx returns (cleolease takes the lease, then BEGIN IMMEDIATE)
// and that the hold ended when the transaction did.
func (w *ledgerWriter) writeTx(ctx context.Context, e entry, leaseEpoch int64, o *op) (int64, error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	o.grant(Now())
	defer o.end()
	epoch := leaseEpoch
	mode := "lease-tx"
	if leaseEpoch == 0 {
		mode = "tx"
		err := tx.QueryRowContext(ctx, `SELECT epoch FROM _writer_leases WHERE scope = ? AND lane = ? AND active = 1`,
			Scope, Lane).Scan(&epoch)
		switch {
		case err == sql.ErrNoRows:
			epoch = -1 // the checker reports it
		case err != nil:
			tx.Rollback()
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, insertSQL, e.stream, e.n, e.uid(), w.pid, epoch, mode, Scope, Lane); err != nil {
		tx.Rollback()
		return 0, err
	}
	return epoch, tx.Commit()
}

// writeExec writes e with one autocommit Exec; the epoch recorded is
// leaseEpoch, or (0) the active row's as the INSERT reads it. It returns the
// epoch recorded. o, unless nil, learns when the lane was granted — not
// visible from outside an autocommit Exec: the time its INSERT ran, read
// back with the epoch — and that the hold ended when the Exec returned;
// an Exec that failed counts as a wait that ended without a grant.
func (w *ledgerWriter) writeExec(ctx context.Context, e entry, leaseEpoch int64, o *op) (int64, error) {
	var ep any
	mode := "exec"
	if leaseEpoch != 0 {
		ep, mode = leaseEpoch, "lease-exec"
	}
	if _, err := w.db.ExecContext(ctx, insertSQL, e.stream, e.n, e.uid(), w.pid, ep, mode, Scope, Lane); err != nil {
		return 0, err
	}
	done := Now()
	if leaseEpoch != 0 {
		return leaseEpoch, nil
	}
	// The epoch the INSERT recorded is what the ack must name.
	var epoch int64
	var at sql.NullInt64
	err := w.db.QueryRowContext(context.Background(), `SELECT epoch, at FROM ledger WHERE stream = ? AND n = ?`, e.stream, e.n).Scan(&epoch, &at)
	if err != nil {
		w.logErr(Classify(ctx, err), "read-back", err)
		return -2, nil
	}
	if at.Valid {
		o.grant(at.Int64)
		o.endAt(done)
	}
	return epoch, nil
}

// now is the clock of the idle-lane check: wall-clock microseconds, the
// clock SQLite's unixepoch('subsec') reads too (the INSERT's at), and the
// same in every process of the host.
func Now() int64 { return time.Now().UnixMicro() }

// op is one writer operation as the idle-lane check sees it, in the ack
// log: "W <op> <µs> <mode> <giveup>" when it starts waiting for the lane,
// then "G <op> <µs>" when it is granted the lane and "R <op> <µs>" when
// that hold ended, or "X <op> <µs>" when it stopped waiting without a
// grant. Its methods do nothing on a nil op (the writes inside a Lease,
// whose op is the Lease's).
type op struct {
	w       *ledgerWriter
	id      string
	started int64
	granted bool
	ended   bool
}

// begin logs that operation id (<goroutine>.<n>, unique in this process)
// starts waiting for the lane.
func (w *ledgerWriter) begin(id, mode string, giveUp bool) *op {
	o := &op{w: w, id: id, started: Now()}
	g := 0
	if giveUp {
		g = 1
	}
	w.line(fmt.Sprintf("W %s %d %s %d\n", id, o.started, mode, g), false)
	return o
}

// grant logs that the lane was granted at t.
func (o *op) grant(t int64) {
	if o == nil || o.granted || o.ended {
		return
	}
	o.granted = true
	o.w.line(fmt.Sprintf("G %s %d\n", o.id, max(t, o.started)), false)
}

// end logs, now, that the hold ended (after a grant) or the wait did.
func (o *op) end() { o.endAt(Now()) }

// endAt is end at t; later calls do nothing.
func (o *op) endAt(t int64) {
	if o == nil || o.ended {
		return
	}
	o.ended = true
	kind := "X"
	if o.granted {
		kind = "R"
	}
	o.w.line(fmt.Sprintf("%s %s %d\n", kind, o.id, t), false)
}

func (w *ledgerWriter) ack(e entry, epoch int64, mode string) {
	w.line(fmt.Sprintf("A %s %d %s\n", e.uid(), epoch, mode), true)
}

func (w *ledgerWriter) logErr(class, op string, err error) {
	w.line(fmt.Sprintf("E %s %s %q\n", class, op, err.Error()), false)
}

// failed logs a failed write of e and resolves its outcome from the
// database: the entry to write next is the one after the stream's last
// committed entry. An entry committed by an operation whose error was
// definite (lease lost, unavailable; a context error of the giveup fault)
// is a phantom commit.
func (w *ledgerWriter) failed(ctx context.Context, e entry, mode string, giveUp bool, err error) entry {
	class := Classify(ctx, err)
	w.logErr(class, mode, err)
	last := w.lastN(e.stream)
	if last >= e.n {
		if definite(class, giveUp) {
			w.logErr(ClassPhantom, mode, fmt.Errorf("%s committed although the write failed with %v", e.uid(), err))
		} else {
			w.line(fmt.Sprintf("M %s %s\n", e.uid(), class), false) // ambiguous, committed: not acknowledged
		}
	}
	return entry{stream: e.stream, n: last + 1}
}

// lastN reads the stream's last committed n, retrying until it can.
func (w *ledgerWriter) lastN(stream string) int64 {
	for {
		var n int64
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.db.QueryRowContext(ctx, `SELECT coalesce(max(n), 0) FROM ledger WHERE stream = ?`, stream).Scan(&n)
		if err == nil {
			cancel()
			return n
		}
		w.logErr(Classify(ctx, err), "read", err)
		cancel()
	}
}
