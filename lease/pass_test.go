package lease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Tests of the hand-off inside the holder's last data transaction (Pass)
// and of the grant confirmed inside the waiter's own transaction
// (Confirmer), with the waiters in other processes.

func init() {
	if os.Getenv("CLEOLEASE_ROLE") == "pass-confirm-wait" {
		os.Exit(passRoleConfirmWait())
	}
}

// commitPassed is passTx's end for a transaction that commits: COMMIT,
// then the Pass told so.
func commitPassed(t *testing.T) func(*sqlite3.SQLiteConn, *Pass) {
	return func(c *sqlite3.SQLiteConn, p *Pass) {
		if _, err := c.ExecContext(context.Background(), "COMMIT", nil); err != nil {
			t.Fatal(err)
		}
		p.Committed()
	}
}

// expectGranted reads the waiter's "granted" line and checks its epoch
// and how many grant datagrams its row refused. The waiter takes the grant
// inside the transaction the grant datagram opens (begun, confirmed 1)
// unless a look it made for another reason — a registration's answer, a
// ring of the portable tier, which has no file watch — read the row first
// (begun false, confirmed 0): both are correct, and which one comes first
// depends on the machine's scheduling, so either is accepted, but never a
// mix of the two.
func expectGranted(t *testing.T, w *child, epoch int64, refused int) {
	t.Helper()
	got := w.expect("granted")
	var e int64
	var begun bool
	var confirmed, ref int
	if _, err := fmt.Sscanf(got, "%d begun=%t confirmed=%d refused=%d", &e, &begun, &confirmed, &ref); err != nil {
		t.Fatalf("waiter: granted %q: %v", got, err)
	}
	if e != epoch || ref != refused || confirmed > 1 || begun != (confirmed == 1) {
		t.Fatalf("waiter: granted %s; want epoch %d, refused=%d, and begun=true with confirmed=1 or begun=false with confirmed=0", got, epoch, refused)
	}
}

// passRoleConfirmWait waits for s/l with AcquireOptions.Confirm on its own
// connection, prints "refused" once the row has refused a grant datagram,
// then, granted, writes CLEOLEASE_NAME with its epoch inside the
// transaction Acquire opened and prints "granted EPOCH begun=B
// confirmed=N refused=N".
func passRoleConfirmWait() int {
	// No fallback look: the waiter looks when something rings, so the
	// grant is usually taken inside the transaction its datagram opens
	// (expectGranted accepts the other path too).
	noFallback.Store(true)
	path := os.Getenv("CLEOLEASE_DB")
	fail := func(err error) int {
		fmt.Println("ERR", err)
		return 1
	}
	e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: time.Hour, Linger: 0})
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	ctx := context.Background()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for e.Stats().HintsRefused == 0 {
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
		fmt.Println("refused")
	}()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Hour, Require: true, Confirm: rawConfirmer{c}})
		if err != nil {
			return err
		}
		defer h.Release()
		begun := h.Begun()
		if !begun {
			if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
				return err
			}
		}
		f, lost, err := h.FenceBegin(ctx, c)
		if err != nil || lost {
			c.ExecContext(ctx, "ROLLBACK", nil)
			return fmt.Errorf("fence at begin: lost %v, %v", lost, err)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO grants(who, epoch) VALUES ('"+os.Getenv("CLEOLEASE_NAME")+"', "+strconv.FormatInt(h.Epoch(), 10)+")", nil); err != nil {
			c.ExecContext(ctx, "ROLLBACK", nil)
			return err
		}
		if err := f.Check(ctx, c, true); err != nil {
			c.ExecContext(ctx, "ROLLBACK", nil)
			return err
		}
		if _, err := c.ExecContext(ctx, "COMMIT", nil); err != nil {
			return err
		}
		st := e.Stats()
		fmt.Printf("granted %d begun=%v confirmed=%d refused=%d\n", h.Epoch(), begun, st.Confirmed, st.HintsRefused)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return 0
}

// rawConfirmer is a Confirmer on a go-sqlite3 connection.
type rawConfirmer struct{ c *sqlite3.SQLiteConn }

func (r rawConfirmer) BeginImmediate(ctx context.Context) error {
	_, err := r.c.ExecContext(ctx, "BEGIN IMMEDIATE", nil)
	return err
}

func (r rawConfirmer) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return r.c.QueryContext(ctx, q, args)
}

func (r rawConfirmer) Rollback() { r.c.ExecContext(context.Background(), "ROLLBACK", nil) }

// checkedTx runs body (if not empty) inside BEGIN IMMEDIATE on a
// connection of db, fenced by h (FenceBegin, then Check before the end),
// and then then, which ends the transaction; an error of either fails t.
func checkedTx(t *testing.T, db *sql.DB, h *Hold, body string, then func(c *sqlite3.SQLiteConn, f *Fencing) error) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
			return err
		}
		f, lost, err := h.FenceBegin(ctx, c)
		if err != nil || lost {
			return fmt.Errorf("FenceBegin: lost %v, %v", lost, err)
		}
		if body != "" {
			if _, err := c.ExecContext(ctx, body, nil); err != nil {
				return err
			}
		}
		if err := f.Check(ctx, c, true); err != nil {
			return err
		}
		return then(c, f)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// passTx runs body inside BEGIN IMMEDIATE on a connection of db, fenced
// by h, with the hand-off written before COMMIT (Fencing.Pass, which must
// happen), and then end, which decides how the transaction ends and
// completes the Pass.
func passTx(t *testing.T, db *sql.DB, h *Hold, body string, end func(c *sqlite3.SQLiteConn, p *Pass)) {
	t.Helper()
	checkedTx(t, db, h, body, func(c *sqlite3.SQLiteConn, f *Fencing) error {
		p, err := f.Pass(context.Background(), c)
		if err != nil || p == nil {
			return fmt.Errorf("Pass: %v, %v (want a hand-off inside the commit)", p, err)
		}
		end(c, p)
		return nil
	})
}

// keptTx runs body in a write transaction under h whose commit keeps the
// lane within the turn: Pass must hand nothing over.
func keptTx(t *testing.T, db *sql.DB, h *Hold, body string) {
	t.Helper()
	checkedTx(t, db, h, body, func(c *sqlite3.SQLiteConn, f *Fencing) error {
		if p, err := f.Pass(context.Background(), c); p != nil || err != nil {
			return fmt.Errorf("Pass within the turn: %v, %v (want none)", p, err)
		}
		_, err := c.ExecContext(context.Background(), "COMMIT", nil)
		return err
	})
}

func grantsOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	return strings.Join(relGrants(t, db), ",")
}

// TestPassGrantsInsideTheLastCommit: a holder whose commit ends its turn
// while a waiter of another process registered writes the waiter's grant
// in that commit — no hand-off transaction of its own — and rings it; the
// waiter, told by the datagram, confirms the grant inside its own
// transaction (no read on its engine's connection) at epoch + 1.
func TestPassGrantsInsideTheLastCommit(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	db := rawDB(t, path)
	epoch := h.Epoch()
	w := startChild(t, "pass-confirm-wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	before := e.Stats()
	passTx(t, db, h, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h.Release()
	expectGranted(t, w, epoch+1, 0)
	after := e.Stats()
	if after.LeaseWrites != before.LeaseWrites || after.PassedInCommit != 1 || after.Handoffs != 1 || after.Lost != 0 {
		t.Fatalf("stats %+v after %+v: want the hand-off inside the data commit, no transaction of the engine's", after, before)
	}
	if got, want := grantsOf(t, db), fmt.Sprintf("holder@%d,waiter@%d", epoch, epoch+1); got != want {
		t.Fatalf("grants %s, want %s", got, want)
	}
}

// TestPassRolledBackLeavesTheLane: a COMMIT that fails (a deferred foreign
// key: SQLite leaves the transaction open, and the caller rolls back) or
// a transaction rolled back after the grant was written (as after an I/O
// error at COMMIT) takes the grant back with the data: the holder reads
// the row again, still holds the lane at its epoch, can write, and its
// release hands the lane off the old way at epoch + 1.
func TestPassRolledBackLeavesTheLane(t *testing.T) {
	needDoorbell(t)
	for _, fk := range []bool{true, false} {
		t.Run(fmt.Sprintf("deferredFK=%v", fk), func(t *testing.T) {
			e, path, h := holdLane(t)
			db := rawDB(t, path)
			if _, err := db.Exec(`CREATE TABLE p(id INTEGER PRIMARY KEY);
				CREATE TABLE ch(pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
				t.Fatal(err)
			}
			epoch := h.Epoch()
			w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
			waitRegistered(t, e, 1)
			before := e.Stats()
			ctx := context.Background()
			fkDB, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000&_foreign_keys=1")
			if err != nil {
				t.Fatal(err)
			}
			defer fkDB.Close()
			passTx(t, fkDB, h, "SELECT 1", func(c *sqlite3.SQLiteConn, p *Pass) {
				if _, err := c.ExecContext(ctx, "INSERT INTO ch VALUES (42); INSERT INTO grants(who, epoch) VALUES ('lost', 0)", nil); err != nil {
					t.Fatal(err)
				}
				if fk {
					_, err := c.ExecContext(ctx, "COMMIT", nil)
					var se sqlite3.Error
					if !errors.As(err, &se) || se.Code != sqlite3.ErrConstraint {
						t.Fatalf("COMMIT: %v, want a foreign key constraint error", err)
					}
					if c.AutoCommit() {
						t.Fatal("the transaction ended at the failed COMMIT; this test needs it open")
					}
				}
				if _, err := c.ExecContext(ctx, "ROLLBACK", nil); err != nil {
					t.Fatal(err)
				}
				p.Failed()
			})
			if !h.Held() {
				t.Fatal("the hold no longer believes it holds after the rollback")
			}
			if err := h.Check(ctx); err != nil {
				t.Fatalf("Check after the rollback: %v", err)
			}
			relOneActive(t, db, e.HolderID(), epoch)
			if err := fencedWrite(ctx, db, h, "holder"); err != nil {
				t.Fatalf("fenced write after the rollback: %v", err)
			}
			h.Release()
			if got := w.expect("granted"); got != strconv.FormatInt(epoch+1, 10) {
				t.Fatalf("waiter granted %s, want %d", got, epoch+1)
			}
			after := e.Stats()
			if after.PassedInCommit != 0 || after.Handoffs != 1 || after.LeaseWrites != before.LeaseWrites+1 || after.Lost != 0 {
				t.Fatalf("stats %+v after %+v: want one hand-off on the engine's connection", after, before)
			}
			if got, want := grantsOf(t, db), fmt.Sprintf("holder@%d,waiter@%d", epoch, epoch+1); got != want {
				t.Fatalf("grants %s, want %s", got, want)
			}
		})
	}
}

// TestPassCommitOutcomeUnknown: when the COMMIT's outcome is unknown (an
// I/O error reported after the commit went through, injected at
// "pass/commit"), the holder reads the row again and finds the waiter's
// grant: the lane is handed off, the waiter rung, nothing is lost.
func TestPassCommitOutcomeUnknown(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	db := rawDB(t, path)
	epoch := h.Epoch()
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	var injected int
	e.setHook(func(op string) error {
		if op == "pass/commit" {
			injected++
			return errIOErr
		}
		return nil
	})
	before := e.Stats()
	passTx(t, db, h, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	e.setHook(nil)
	h.Release()
	if got := w.expect("granted"); got != strconv.FormatInt(epoch+1, 10) {
		t.Fatalf("waiter granted %s, want %d", got, epoch+1)
	}
	after := e.Stats()
	if injected != 1 || after.PassedInCommit != 1 || after.LeaseWrites != before.LeaseWrites || after.Lost != 0 {
		t.Fatalf("injected %d, stats %+v after %+v", injected, after, before)
	}
}

// TestForgedGrantDatagramIsConfirmedAndRefused: a grant datagram the row
// does not back (forged here; stale or early alike) sends the waiter into
// BEGIN IMMEDIATE and the confirming read, which refuses it: the waiter
// rolls back, writes nothing, keeps waiting without an error, and takes
// the lane when it is really handed to it.
func TestForgedGrantDatagramIsConfirmedAndRefused(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLane(t)
	db := rawDB(t, path)
	epoch := h.Epoch()
	w := startChild(t, "pass-confirm-wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	l := e.lane("s", "l")
	l.mu.Lock()
	var id string
	for k := range l.inbox.pending {
		id = k
	}
	l.mu.Unlock()
	e.bell.ringGrant(id, "s", "l", nil)
	w.expect("refused")
	relOneActive(t, db, e.HolderID(), epoch)
	if got := grantsOf(t, db); got != "" {
		t.Fatalf("grants %q after a forged grant, want none", got)
	}
	passTx(t, db, h, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h.Release()
	expectGranted(t, w, epoch+1, 1)
	if got, want := grantsOf(t, db), fmt.Sprintf("holder@%d,waiter@%d", epoch, epoch+1); got != want {
		t.Fatalf("grants %s, want %s", got, want)
	}
}

// TestHeartbeatSkipsYoungGrants: the heartbeat writes a row only once its
// heartbeat_at (written by the grant, then by each beat) is at least
// TTL/6 old, so a short hold costs no heartbeat transaction while a long
// one still beats every period.
func TestHeartbeatSkipsYoungGrants(t *testing.T) {
	const ttl = 30 * time.Second
	at := time.Unix(1000, 0)
	g := &grant{at: at}
	for _, c := range []struct {
		now  time.Duration
		want bool
	}{{0, false}, {ttl/6 - 1, false}, {ttl / 6, true}, {ttl / 3, true}} {
		if got := g.beatDue(at.Add(c.now), ttl/6); got != c.want {
			t.Errorf("grant %s old: due %v, want %v", c.now, got, c.want)
		}
	}
	g.beatAt.Store(at.Add(ttl / 3).UnixNano())
	if g.beatDue(at.Add(ttl/3+ttl/6-1), ttl/6) || !g.beatDue(at.Add(ttl/3+ttl/6), ttl/6) {
		t.Error("after a beat, the next is due TTL/6 after it")
	}
}

// TestPassTurnJudgedAtCommit: a commit judged inside the grant's slice
// keeps the lane although the slice ends during its COMMIT: the release
// that follows does not hand the lane off in a transaction of its own;
// the next writer of the process, queued at the gate, carries the grant
// in its own commit (one SQLite write transaction for the hand-off, not
// two).
func TestPassTurnJudgedAtCommit(t *testing.T) {
	needDoorbell(t)
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger, o.Slice = 0, time.Hour })
	ctx := context.Background()
	h1, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	epoch := h1.Epoch()
	w := startChild(t, "pass-confirm-wait", path, "CLEOLEASE_NAME=waiter")
	waitRegistered(t, e, 1)
	// The process's next writer queues at the gate: the slice keeps the
	// lane for it.
	next := make(chan *Hold, 1)
	go func() {
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Error(err)
		}
		next <- h
	}()
	l := e.lane("s", "l")
	eventually(t, "the next writer to queue at the gate", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.gate.waiters.Len() == 1
	})
	before := e.Stats()
	keptTx(t, db, h1, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")")
	// The slice ends during that COMMIT (only this goroutine reads it).
	e.opts.Slice = 0
	h1.Release()
	h2 := <-next
	if h2 == nil {
		t.FailNow()
	}
	if st := e.Stats(); st.LeaseWrites != before.LeaseWrites || st.Handoffs != before.Handoffs || h2.Epoch() != epoch {
		t.Fatalf("after the first release: stats %+v (before %+v), next writer's epoch %d, want %d: the release handed the lane off in a transaction of its own", st, before, h2.Epoch(), epoch)
	}
	passTx(t, db, h2, "INSERT INTO grants(who, epoch) VALUES ('holder', "+strconv.FormatInt(epoch, 10)+")",
		commitPassed(t))
	h2.Release()
	expectGranted(t, w, epoch+1, 0)
	after := e.Stats()
	if after.LeaseWrites != before.LeaseWrites || after.PassedInCommit != 1 || after.Handoffs != 1 {
		t.Fatalf("stats %+v after %+v: want the one hand-off inside the second commit", after, before)
	}
	if got, want := grantsOf(t, db), fmt.Sprintf("holder@%d,holder@%d,waiter@%d", epoch, epoch, epoch+1); got != want {
		t.Fatalf("grants %s, want %s", got, want)
	}
}
