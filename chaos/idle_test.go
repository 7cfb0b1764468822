//go:build unix

package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The idle-lane and wait checks. The idle check: over a phase, the longest interval in which some
// live writer waited for the lane while no process held it. A writer
// reports its operations in its ack log (op, in writer_test.go): when one
// starts waiting (W), when it was granted the lane (G) and when that hold
// ended (R), or when it stopped waiting without a grant (X). The lane is
// held while some operation is between G and R — a row that lingers after
// its hold ended, or a row whose process has not learnt its grant yet,
// counts as idle. A waiter is live while its process is neither stopped
// nor dead.
//
// Exclusions (each one explicit here, and totalled in the summary):
//
//   - A SIGSTOPped process whose row is the lane's active row blocks the
//     lane until it resumes, its row is stolen after the TTL or the lane is
//     broken: the monitor (rowMonitor) samples the active row every
//     monitorEvery, and a sample naming a stopped process excludes the
//     time from it to the next sample (at most to that process's SIGCONT).
//     Counting starts again at the resume, the steal or the break. The TTL
//     steal is therefore not timed here.
//   - A sample that could not be read (SQLITE_BUSY: someone holds the
//     write lock of a rollback-journal file) while some writer is stopped
//     is excluded the same way: the stopped writer may be the one holding
//     the lock.
//   - A SIGSTOPped process holding SQLite's write lock (frozen inside a
//     lease-engine transaction — a claim, a reclaim, a queue row — or a
//     BEGIN IMMEDIATE it has not turned into a hold yet) stops every write,
//     whatever the row says: the probe (writelock_test.go) asks the kernel
//     at each sample who holds the lock (for an open-file-description
//     lock, which has no owner pid, it searches the stopped writers'
//     descriptors), and a sample naming a stopped process excludes the
//     time to the next sample (at most to its SIGCONT). A holder it
//     cannot name is not stopped: nothing is excluded.
//   - A SIGSTOPped writer that is inside a hold holds the lane: nothing is
//     idle then (no exclusion needed: it is held).
//   - A SIGKILLed holder is reclaimed at once (its lifetime lock is gone):
//     no exclusion; its open hold ends when it was reaped.
//
// The wait check bounds how long one operation waits live while the lane
// is not blocked by a stopped process — the exclusions above, the times a
// stopped process was inside a hold, and every time any process is
// stopped — whoever holds the lane meanwhile: it catches a waiter passed
// over while other processes keep the lane (a starved waiter), which the
// idle check does not see. Any stopped process counts for the wait check
// because one frozen inside a lease-engine transaction (a claim, a queue
// row, a settle, a grant it is confirming) holds SQLite's write lock
// without the row: the holder's commit, and so every waiter behind it,
// waits for its SIGCONT, and neither the row nor a sample shows it (a
// reader is not blocked by a RESERVED lock). Seen 2026-12-04: a waiter
// waited 1.165 s behind its own process's hold, whose commit waited for a
// writer stopped for 938 ms.
//
// Not excluded from the idle check, and a possible false alarm there: a
// stopped writer frozen inside a read of a rollback-journal file (a
// SHARED lock, which the write-lock probe does not look for). It is rare,
// and the printed window names the stopped writers.

// span is the half-open interval [from, to) of wall-clock microseconds.
type span struct{ from, to int64 }

func (s span) len() time.Duration { return time.Duration(s.to-s.from) * time.Microsecond }

// spanSet is a set of instants: sorted, disjoint spans that do not touch.
type spanSet []span

// normalize returns the union of ss as a spanSet.
func normalize(ss []span) spanSet {
	var in []span
	for _, s := range ss {
		if s.to > s.from {
			in = append(in, s)
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].from < in[j].from })
	var out spanSet
	for _, s := range in {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// minus returns a without the instants of b.
func (a spanSet) minus(b spanSet) spanSet {
	var out spanSet
	j := 0
	for _, s := range a {
		cur := s.from
		for j < len(b) && b[j].to <= cur {
			j++
		}
		for k := j; k < len(b) && b[k].from < s.to; k++ {
			if b[k].from > cur {
				out = append(out, span{cur, b[k].from})
			}
			cur = max(cur, b[k].to)
		}
		if cur < s.to {
			out = append(out, span{cur, s.to})
		}
	}
	return out
}

func (a spanSet) total() time.Duration {
	var d time.Duration
	for _, s := range a {
		d += s.len()
	}
	return d
}

// opRec is one writer operation read from an ack log (times 0 when not
// logged).
type opRec struct {
	writer     int
	pid        int64
	id, mode   string
	giveUp     bool
	w, g, r, x int64
}

// stopRec is one SIGSTOP of a writer process, until its SIGCONT (or its
// SIGKILL).
type stopRec struct {
	writer   int
	pid      int64
	from, to int64
}

// rowSample is one read of the lane's active row by the monitor, with
// the holder of SQLite's write lock then (writelock_test.go).
type rowSample struct {
	at   int64
	pid  int64 // the holder's pid; 0: no active row
	ok   bool  // false: the read failed (SQLITE_BUSY)
	lock int64 // the pid holding SQLite's write lock; 0: nobody (or not probed), -1: a process the probe cannot name (not a stopped writer)
}

// idleInput is what the check knows of a phase.
type idleInput struct {
	ops     []opRec
	stops   []stopRec
	ends    map[int64]int64 // pid → when its process was reaped (killed); its open operations end there
	samples []rowSample
	end     int64 // when the observation ended: other open operations end there
}

// endOf is when the operations left open by process pid end: when it was
// reaped, or the end of the observation.
func (in idleInput) endOf(pid int64) int64 {
	if e, ok := in.ends[pid]; ok {
		return e
	}
	return in.end
}

// waitSpan is when o waited: from W to its grant, or to X.
func (in idleInput) waitSpan(o opRec) span {
	switch {
	case o.g > 0:
		return span{o.w, max(o.w, o.g)}
	case o.x > 0:
		return span{o.w, o.x}
	}
	return span{o.w, in.endOf(o.pid)}
}

// heldSpan is when o held the lane, if it was granted: from G to R.
func (in idleInput) heldSpan(o opRec) (span, bool) {
	if o.g == 0 {
		return span{}, false
	}
	if o.r > 0 {
		return span{o.g, o.r}, true
	}
	return span{o.g, in.endOf(o.pid)}, true
}

// idleResult is the analysis of a phase.
type idleResult struct {
	idle     spanSet // live writers waited, nobody held, nothing excluded
	excluded spanSet // the exclusions' union (whether anyone waited or not)
	locked   spanSet // the part of it excluded for a stopped process's write lock
	longest  span
	// The wait check: blocked is excluded plus the times any process was
	// stopped (inside a hold or not); waits[i] is how long in.ops[i]
	// waited live outside blocked, longestWait the most of them (at
	// waitOp).
	blocked     spanSet
	waits       []time.Duration
	longestWait time.Duration
	waitOp      int
}

// analyzeIdle computes the idle spans of a phase (see the top of this
// file).
func analyzeIdle(in idleInput) idleResult {
	stopsOf := map[int64][]span{}
	for _, s := range in.stops {
		stopsOf[s.pid] = append(stopsOf[s.pid], span{s.from, s.to})
	}
	waits := map[int64][]span{}
	var held []span
	for _, o := range in.ops {
		if o.w == 0 {
			continue
		}
		waits[o.pid] = append(waits[o.pid], in.waitSpan(o))
		if h, ok := in.heldSpan(o); ok {
			held = append(held, h)
		}
	}
	var live []span
	for pid, ws := range waits {
		live = append(live, normalize(ws).minus(normalize(stopsOf[pid]))...)
	}
	stoppedUntil := func(pid, t int64) (int64, bool) {
		for _, s := range stopsOf[pid] {
			if s.from <= t && t < s.to {
				return s.to, true
			}
		}
		return 0, false
	}
	anyStopped := func(t int64) bool {
		for _, s := range in.stops {
			if s.from <= t && t < s.to {
				return true
			}
		}
		return false
	}
	var excl, lockExcl []span
	for i, s := range in.samples {
		next := in.end
		if i+1 < len(in.samples) {
			next = in.samples[i+1].at
		}
		switch {
		case !s.ok && anyStopped(s.at):
			excl = append(excl, span{s.at, next})
		case s.ok && s.pid > 0:
			if until, ok := stoppedUntil(s.pid, s.at); ok {
				excl = append(excl, span{s.at, min(next, until)})
			}
		}
		if s.lock > 0 {
			if until, ok := stoppedUntil(s.lock, s.at); ok {
				lockExcl = append(lockExcl, span{s.at, min(next, until)})
			}
		}
	}
	res := idleResult{excluded: normalize(append(excl, lockExcl...)), locked: normalize(lockExcl)}
	res.idle = normalize(live).minus(normalize(held)).minus(res.excluded)
	for _, s := range res.idle {
		if s.len() > res.longest.len() {
			res.longest = s
		}
	}

	// The wait check.
	blocked := append([]span(nil), res.excluded...)
	for _, st := range in.stops {
		blocked = append(blocked, span{st.from, st.to})
	}
	for _, o := range in.ops {
		h, ok := in.heldSpan(o)
		if !ok {
			continue
		}
		for _, st := range stopsOf[o.pid] {
			blocked = append(blocked, span{max(h.from, st.from), min(h.to, st.to)})
		}
	}
	res.blocked = normalize(blocked)
	res.waits = make([]time.Duration, len(in.ops))
	for i, o := range in.ops {
		if o.w == 0 {
			continue
		}
		d := normalize([]span{in.waitSpan(o)}).minus(normalize(stopsOf[o.pid])).minus(res.blocked).total()
		res.waits[i] = d
		if d > res.longestWait {
			res.longestWait, res.waitOp = d, i
		}
	}
	return res
}

// monitorEvery is how often the monitor reads the lane's active row.
const monitorEvery = 10 * time.Millisecond

// rowMonitor reads the lane's active row every monitorEvery from the test
// process, on a plain go-sqlite3 connection with busy_timeout 0 (a read
// never waits: in WAL mode it is never refused, with the rollback journal
// a busy read is recorded as not ok).
type rowMonitor struct {
	db      *sql.DB
	probe   *writeLockProbe
	stopped func() []int64 // the writers stopped now
	stop    chan struct{}
	done    chan struct{}
	holder  atomic.Value // string: the holder id of the last row read

	mu       sync.Mutex
	samples  []rowSample
	probeErr error // the write-lock probe's first error
}

// startMonitor starts the monitor of the database at path, in journal
// mode journal ("" for WAL); stopped lists the writers stopped now.
func startMonitor(t *testing.T, path, journal string, stopped func() []int64) *rowMonitor {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	probe, err := startWriteLockProbe(path, journal)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	m := &rowMonitor{db: db, probe: probe, stopped: stopped, stop: make(chan struct{}), done: make(chan struct{})}
	m.holder.Store("")
	go m.run()
	return m
}

func (m *rowMonitor) run() {
	defer close(m.done)
	tick := time.NewTicker(monitorEvery)
	defer tick.Stop()
	for {
		m.sample()
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

func (m *rowMonitor) sample() {
	at := now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var pid int64
	var id string
	err := m.db.QueryRowContext(ctx, `SELECT holder_pid, holder_id FROM _writer_leases WHERE scope = ? AND lane = ? AND active = 1`,
		ledgerScope, ledgerLane).Scan(&pid, &id)
	s := rowSample{at: at, pid: pid, ok: err == nil || err == sql.ErrNoRows}
	if err == nil {
		m.holder.Store(id)
	}
	lock, perr := m.probe.holder(m.stopped())
	s.lock = lock
	m.mu.Lock()
	m.samples = append(m.samples, s)
	if perr != nil && m.probeErr == nil {
		m.probeErr = perr
	}
	m.mu.Unlock()
}

// holderID is the holder id of the last active row read ("" if none yet).
func (m *rowMonitor) holderID() string { return m.holder.Load().(string) }

// close stops the monitor and returns its samples, and the write-lock
// probe's first error (its samples then say nobody held the lock).
// A second call returns the same.
func (m *rowMonitor) close() ([]rowSample, error) {
	select {
	case <-m.stop:
	default:
		close(m.stop)
		<-m.done
		m.db.Close()
		perr := m.probe.close()
		m.mu.Lock()
		if m.probeErr == nil {
			m.probeErr = perr
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.samples, m.probeErr
}

// ---------------------------------------------------------------------------
// The analysis on hand-made phases.

const ms = int64(time.Millisecond / time.Microsecond)

func TestIdleLaneLingeringRowIsIdle(t *testing.T) {
	// Writer 0 holds 0–100 ms, its row then lingers; writer 1 waits from
	// 50 ms and is granted at 1,300 ms.
	in := idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2, r: 100 * ms},
			{pid: 11, w: 50 * ms, g: 1300 * ms, r: 1310 * ms},
		},
		end: 2000 * ms,
	}
	res := analyzeIdle(in)
	if want := (span{100 * ms, 1300 * ms}); res.longest != want {
		t.Fatalf("longest idle %v, want %v (the lingering row is idle)", res.longest, want)
	}
}

func TestIdleLaneHeldIsNotIdle(t *testing.T) {
	// Writer 1 waits 2 s while writers 0 and 2 hold in turn (a hand-off
	// gap of 2 ms in between).
	in := idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2, r: 1000 * ms},
			{pid: 12, w: 10 * ms, g: 1002 * ms, r: 2100 * ms},
			{pid: 11, w: 5 * ms, g: 2100 * ms, r: 2200 * ms},
		},
		end: 3000 * ms,
	}
	res := analyzeIdle(in)
	if got := res.longest.len(); got != 2*time.Millisecond {
		t.Fatalf("longest idle %v (%v), want the 2 ms hand-off", got, res.longest)
	}
}

func TestIdleLaneStoppedRowHolderExcludedUntilResume(t *testing.T) {
	// Writer 0's hold ends at 100 ms and its row lingers; it is stopped
	// 110–1,500 ms; the monitor sees its row until 1,520 ms; writer 1
	// waits from 120 ms to 1,600 ms. Only 1,500–1,600 ms is idle.
	var samples []rowSample
	for at := int64(0); at < 2000*ms; at += 10 * ms {
		pid := int64(10)
		if at >= 1520*ms {
			pid = 11
		}
		samples = append(samples, rowSample{at: at, pid: pid, ok: true})
	}
	in := idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2, r: 100 * ms},
			{pid: 11, w: 120 * ms, g: 1600 * ms, r: 1610 * ms},
		},
		stops:   []stopRec{{pid: 10, from: 110 * ms, to: 1500 * ms}},
		samples: samples,
		end:     2000 * ms,
	}
	res := analyzeIdle(in)
	if want := (span{1500 * ms, 1600 * ms}); res.longest != want {
		t.Fatalf("longest idle %v, want %v (counted from the resume)", res.longest, want)
	}
	if want := (span{110 * ms, 1500 * ms}); len(res.excluded) != 1 || res.excluded[0] != want {
		t.Fatalf("excluded %v, want [%v]", res.excluded, want)
	}
}

func TestIdleLaneStoppedWaiterIsNotLive(t *testing.T) {
	// Writer 1 waits 100–2,000 ms but is stopped 200–1,900 ms; nobody
	// holds.
	in := idleInput{
		ops:   []opRec{{pid: 11, w: 100 * ms, x: 2000 * ms}},
		stops: []stopRec{{pid: 11, from: 200 * ms, to: 1900 * ms}},
		end:   2000 * ms,
	}
	res := analyzeIdle(in)
	if got := res.idle.total(); got != 200*time.Millisecond {
		t.Fatalf("idle %v (%v), want 200ms: a stopped waiter does not wait", got, res.idle)
	}
}

func TestIdleLaneKilledHolderEndsAtReap(t *testing.T) {
	// Writer 0 is killed inside its hold (reaped at 500 ms); writer 1
	// waits from 100 ms and is granted at 520 ms.
	in := idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2},
			{pid: 11, w: 100 * ms, g: 520 * ms, r: 530 * ms},
		},
		ends: map[int64]int64{10: 500 * ms},
		end:  1000 * ms,
	}
	res := analyzeIdle(in)
	if want := (span{500 * ms, 520 * ms}); res.longest != want {
		t.Fatalf("longest idle %v, want %v", res.longest, want)
	}
}

func TestIdleLaneBusySampleExcludedOnlyWhileStopped(t *testing.T) {
	// Unreadable samples at 0 and 1,000 ms; a writer is stopped only
	// around the second one. Writer 1 waits throughout.
	in := idleInput{
		ops: []opRec{{pid: 11, w: 1, x: 2000 * ms}},
		samples: []rowSample{
			{at: 0}, {at: 10 * ms, ok: true},
			{at: 1000 * ms}, {at: 1010 * ms, ok: true},
		},
		stops: []stopRec{{pid: 12, from: 990 * ms, to: 1005 * ms}},
		end:   2000 * ms,
	}
	res := analyzeIdle(in)
	if want := (spanSet{{1000 * ms, 1010 * ms}}); fmt.Sprint(res.excluded) != fmt.Sprint(want) {
		t.Fatalf("excluded %v, want %v", res.excluded, want)
	}
}

// deadRowLockedSamples are the monitor's samples of the two tests below:
// every 10 ms for 2 s the row of pid 10, and SQLite's write lock held by
// pid 12 from the 170 ms sample to 1,500 ms.
func deadRowLockedSamples() []rowSample {
	var samples []rowSample
	for at := int64(0); at < 2000*ms; at += 10 * ms {
		s := rowSample{at: at, pid: 10, ok: true}
		if at >= 170*ms && at < 1500*ms {
			s.lock = 12
		}
		samples = append(samples, s)
	}
	return samples
}

func TestIdleLaneStoppedWriteLockHolderExcludedUntilResume(t *testing.T) {
	// Writer 0 is killed inside its hold (reaped at 100 ms) and its row
	// stays; writer 2 is stopped 160–1,500 ms inside the transaction that
	// reclaims it, holding SQLite's write lock (the probe sees it from the
	// 170 ms sample until 1,500 ms); writer 1 waits from 150 ms and is
	// granted at 1,600 ms. Only 150–170 and 1,500–1,600 ms are idle (and
	// writer 0's own microsecond of waiting).
	samples := deadRowLockedSamples()
	in := idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2},
			{pid: 11, w: 150 * ms, g: 1600 * ms, r: 1610 * ms},
		},
		stops:   []stopRec{{pid: 12, from: 160 * ms, to: 1500 * ms}},
		ends:    map[int64]int64{10: 100 * ms},
		samples: samples,
		end:     2000 * ms,
	}
	res := analyzeIdle(in)
	if want := (spanSet{{1, 2}, {150 * ms, 170 * ms}, {1500 * ms, 1600 * ms}}); fmt.Sprint(res.idle) != fmt.Sprint(want) {
		t.Fatalf("idle %v, want %v (the stopped write-lock holder's time excluded)", res.idle, want)
	}
	if want := (spanSet{{170 * ms, 1500 * ms}}); fmt.Sprint(res.excluded) != fmt.Sprint(want) || fmt.Sprint(res.locked) != fmt.Sprint(want) {
		t.Fatalf("excluded %v (for the write lock %v), want %v for the write lock", res.excluded, res.locked, want)
	}
}

func TestIdleLaneLiveWriteLockHolderIsNotExcluded(t *testing.T) {
	// As above, but the process holding SQLite's write lock for 1.3 s is
	// not stopped: a live process that keeps the write lock while the
	// lane is idle is what the check is for.
	samples := deadRowLockedSamples()
	res := analyzeIdle(idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2},
			{pid: 11, w: 150 * ms, g: 1600 * ms, r: 1610 * ms},
		},
		stops:   []stopRec{{pid: 13, from: 160 * ms, to: 1500 * ms}},
		ends:    map[int64]int64{10: 100 * ms},
		samples: samples,
		end:     2000 * ms,
	})
	if want := (span{150 * ms, 1600 * ms}); res.longest != want || len(res.excluded) != 0 {
		t.Fatalf("longest idle %v, excluded %v; want %v and nothing excluded", res.longest, res.excluded, want)
	}
}

func TestIdleLaneUnnamedWriteLockIsNotExcluded(t *testing.T) {
	// The probe cannot name the write lock's holder (lock -1: not one of
	// the stopped writers) at 0 and 1,000 ms, while writer 12 is stopped
	// around the second: nothing is excluded.
	in := idleInput{
		ops: []opRec{{pid: 11, w: 1, x: 2000 * ms}},
		samples: []rowSample{
			{at: 0, ok: true, lock: -1}, {at: 10 * ms, ok: true},
			{at: 1000 * ms, ok: true, lock: -1}, {at: 1010 * ms, ok: true},
		},
		stops: []stopRec{{pid: 12, from: 990 * ms, to: 1005 * ms}},
		end:   2000 * ms,
	}
	if res := analyzeIdle(in); len(res.excluded) != 0 {
		t.Fatalf("excluded %v, want nothing", res.excluded)
	}
}

func TestWaitStarvedBehindBusyLane(t *testing.T) {
	// Writers 0 and 2 hold in turn for 3 s while writer 1 waits: never
	// idle, but writer 1 waits 3 s.
	var ops []opRec
	for i := int64(0); i < 30; i++ {
		ops = append(ops, opRec{pid: 10 + 2*(i%2), w: i*100*ms + 1, g: i*100*ms + 2, r: (i + 1) * 100 * ms})
	}
	ops = append(ops, opRec{pid: 11, w: 10 * ms, x: 3000 * ms})
	res := analyzeIdle(idleInput{ops: ops, end: 3000 * ms})
	if res.longest.len() > time.Millisecond {
		t.Fatalf("idle %v, want none", res.longest)
	}
	if res.longestWait != 2990*time.Millisecond || res.waitOp != len(ops)-1 {
		t.Fatalf("longest wait %v (op %d), want 2.99s (writer 1's)", res.longestWait, res.waitOp)
	}
}

func TestWaitBehindStoppedHolderIsBlocked(t *testing.T) {
	// Writer 0 is stopped 100–1,500 ms inside its hold (0–1,600 ms);
	// writer 1 waits 50–1,650 ms: 50 + 150 ms of it count.
	res := analyzeIdle(idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2, r: 1600 * ms},
			{pid: 11, w: 50 * ms, g: 1650 * ms, r: 1660 * ms},
		},
		stops: []stopRec{{pid: 10, from: 100 * ms, to: 1500 * ms}},
		end:   2000 * ms,
	})
	if res.longestWait != 200*time.Millisecond || res.waitOp != 1 {
		t.Fatalf("longest wait %v (op %d), want writer 1's 200ms", res.longestWait, res.waitOp)
	}
}

func TestWaitBehindStoppedBystanderIsBlocked(t *testing.T) {
	// Writer 0 holds 0–1,600 ms and is never stopped; writer 2, which
	// holds nothing, is stopped 100–1,000 ms (it may be frozen inside a
	// lease-engine transaction, holding SQLite's write lock, so that
	// writer 0 cannot commit); writer 1 waits 50–1,650 ms: 1,600 − 900 ms
	// of it count.
	res := analyzeIdle(idleInput{
		ops: []opRec{
			{pid: 10, w: 1, g: 2, r: 1600 * ms},
			{pid: 11, w: 50 * ms, g: 1650 * ms, r: 1660 * ms},
		},
		stops: []stopRec{{pid: 12, from: 100 * ms, to: 1000 * ms}},
		end:   2000 * ms,
	})
	if res.longestWait != 700*time.Millisecond || res.waitOp != 1 {
		t.Fatalf("longest wait %v (op %d), want writer 1's 700ms", res.longestWait, res.waitOp)
	}
}

func TestSpanSetMinus(t *testing.T) {
	a := normalize([]span{{0, 10}, {5, 15}, {20, 30}})
	b := normalize([]span{{2, 3}, {14, 22}, {25, 26}})
	got := a.minus(b)
	want := spanSet{{0, 2}, {3, 14}, {22, 25}, {26, 30}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v minus %v = %v, want %v", a, b, got, want)
	}
}

// relTime formats t relative to the phase's start.
func relTime(t, start int64) string {
	return fmt.Sprintf("+%.3fs", float64(t-start)/1e6)
}

// compressSamples describes the monitor's samples within s: each run of
// one holder once.
func compressSamples(samples []rowSample, s span, start int64, who func(pid int64) string) string {
	return compressBy(samples, s, start, func(x rowSample) string {
		switch {
		case !x.ok:
			return "unreadable"
		case x.pid == 0:
			return "no active row"
		}
		return who(x.pid)
	})
}

// compressLocks describes who held SQLite's write lock at the monitor's
// samples within s: each run of one holder once.
func compressLocks(samples []rowSample, s span, start int64, who func(pid int64) string) string {
	return compressBy(samples, s, start, func(x rowSample) string {
		switch {
		case x.lock == 0:
			return "free"
		case x.lock < 0:
			return "held by a process the kernel does not name"
		}
		return who(x.lock)
	})
}

// compressBy describes the samples within s (and 50 ms before it) by
// what, each run of one description once.
func compressBy(samples []rowSample, s span, start int64, what func(rowSample) string) string {
	var b strings.Builder
	last := "?"
	for _, x := range samples {
		if x.at < s.from-50*ms || x.at >= s.to {
			continue
		}
		cur := what(x)
		if cur != last {
			fmt.Fprintf(&b, " %s %s;", relTime(x.at, start), cur)
			last = cur
		}
	}
	return b.String()
}
