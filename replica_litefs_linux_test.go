//go:build linux

package cleolease_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/litefstest"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// LiteFS replicas and failover (issue 23, items 2 and 3) on a real
// two-node cluster on 127.0.0.1.

func init() {
	roles["litefs-node"] = roleNode
}

// roleNode is one application process on a LiteFS node. Both nodes run on
// this kernel, so each process first takes its node's host identity
// (CLEOLEASE_TEST_BOOT_ID: platform.SetTestBootID, test-only), as separate
// machines would have. Commands on stdin: "acquire" (AcquireLease: HELD
// epoch degraded), "release", "begin v" (BeginTx with the lease's context, insert v:
// INTX), "commit", "tx v" (a whole transaction: RES), "stats" (STATS
// reclaim_dead degraded), "exit".
func roleNode() int {
	if id := os.Getenv("CLEOLEASE_TEST_BOOT_ID"); id != "" {
		platform.SetTestBootID(id)
	}
	ctx := context.Background()
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		say("ERR", err)
		return 1
	}
	say("READY", os.Getpid())
	wctx := ctx
	var tx *sql.Tx
	var l *cleolease.Lease
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "acquire":
			if l, err = cleolease.AcquireLease(ctx, db); err != nil {
				say("ERR", err)
				continue
			}
			wctx = l.Context(ctx)
			say("HELD", l.Epoch(), l.Degraded())
		case "release":
			l.Release()
			wctx = ctx
			say("RELEASED")
		case "begin":
			if tx, err = db.BeginTx(wctx, nil); err == nil {
				if _, err = tx.ExecContext(wctx, insertItem, arg, "default"); err != nil {
					tx.Rollback()
				}
			}
			if err != nil {
				say("ERR", err)
				continue
			}
			say("INTX")
		case "commit":
			say("RES", outcome(tx.Commit()))
		case "tx":
			err := func() error {
				tx, err := db.BeginTx(wctx, nil)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(wctx, insertItem, arg, "default"); err != nil {
					tx.Rollback()
					return err
				}
				return tx.Commit()
			}()
			say("RES", outcome(err))
		case "stats":
			s, err := cleolease.Stats(ctx, db)
			if err != nil {
				say("ERR", err)
				continue
			}
			say("STATS", s.ReclaimDead, s.Degraded)
		case "exit":
			db.Close()
			return 0
		default:
			say("ERR unknown command", cmd)
		}
	}
	return 0
}

// replicaDSN is the DSN of app.db on the cluster's replica (no cleolease
// parameter).
func replicaDSN(c *litefstest.Cluster) string {
	return "file:" + c.Replica.Path("app.db") + "?_journal_mode=WAL"
}

// TestLiteFSReplica: on the replica of a database with no lease tables,
// reads work and nothing is created; a write, a transaction and
// AcquireLease fail with a *ReplicaError naming the primary (from
// .primary), not "disk I/O error". Before the fix (main at 0a292dc) even
// the read failed (the first connect created the lease tables) and writes
// failed "disk I/O error: permission denied".
func TestLiteFSReplica(t *testing.T) {
	c := litefstest.Start(t)
	liteFSDB(t, c)
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)
	primary, ok := litefstest.PrimaryName(c.Replica)
	if !ok {
		t.Fatal("the replica has no .primary file")
	}
	db, err := sql.Open("cleolease", replicaDSN(c))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM counter`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read on the replica: %d, %v; want 1, nil", n, err)
	}
	check := func(what string, err error) {
		t.Helper()
		var re *cleolease.ReplicaError
		if !errors.Is(err, cleolease.ErrReplica) || !errors.As(err, &re) || re.Primary != primary {
			t.Errorf("%s on the replica: %v (%T); want a *ReplicaError naming %s", what, err, err, primary)
		}
	}
	_, err = db.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
	check("Exec", err)
	_, err = db.BeginTx(ctx, nil)
	check("BeginTx", err)
	_, err = cleolease.AcquireLease(ctx, db)
	check("AcquireLease", err)
	if got := liteFSQuery(t, c, `SELECT count(*) FROM sqlite_master WHERE name LIKE '\_writer\_%' ESCAPE '\'`); got != 0 {
		t.Errorf("%d lease tables on the primary after the replica's open, want 0", got)
	}
	onlySQLiteFiles(t, c.Replica.Mount)
}

// replicaMigs is one migration the primary has not applied yet.
var replicaMigs = fstest.MapFS{
	"1_t2.up.sql":   {Data: []byte(`CREATE TABLE t2(y);`)},
	"1_t2.down.sql": {Data: []byte(`DROP TABLE t2;`)},
}

// syncHandler keeps the records it is given.
type syncHandler struct {
	mu   *sync.Mutex
	recs *[]slog.Record
	seen chan string // each message, when not full
}

func newSyncHandler() syncHandler {
	return syncHandler{mu: &sync.Mutex{}, recs: &[]slog.Record{}, seen: make(chan string, 64)}
}

func (h syncHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h syncHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	*h.recs = append(*h.recs, r.Clone())
	h.mu.Unlock()
	select {
	case h.seen <- r.Message:
	default:
	}
	return nil
}
func (h syncHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h syncHandler) WithGroup(string) slog.Handler      { return h }

// warning returns the attributes of the first warning whose message
// contains s, or nil.
func (h syncHandler) warning(s string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range *h.recs {
		if r.Level == slog.LevelWarn && strings.Contains(r.Message, s) {
			m := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
			return m
		}
	}
	return nil
}

// TestLiteFSReplicaBehindMigrations: a process whose migrations are ahead
// of the replica's copy opens it with a warning naming the file and both
// versions, reads, and gets the replica error on a write; with
// _migrations_replica=wait the open waits until the primary has migrated
// and LiteFS brought the migration over. Before the fix the open failed.
func TestLiteFSReplicaBehindMigrations(t *testing.T) {
	c := litefstest.Start(t)
	liteFSDB(t, c)
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)
	ctx := context.Background()
	open := func(dsn string, h syncHandler) *sql.DB {
		cfg, err := cleolease.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MigrationsFS = replicaMigs
		cfg.Logger = slog.New(h)
		db, err := cleolease.OpenDB(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}

	// (Its own version table: a cold open's outcome is kept per file and
	// table in a process, and the waiting connector below must not find
	// this one's.)
	h := newSyncHandler()
	db := open(replicaDSN(c)+"&_migrations_table=open_migrations", h)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM counter`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read on a replica behind the migrations: %d, %v", n, err)
	}
	w := h.warning("LiteFS replica")
	if w == nil || w["file"] != c.Replica.Path("app.db") || w["database_version"] != "-1" || w["source_version"] != "1" {
		t.Fatalf("warning %v; want one naming the file, database version -1 and source version 1", w)
	}
	if _, err := db.ExecContext(ctx, `UPDATE counter SET n = n + 1`); !errors.Is(err, cleolease.ErrReplica) {
		t.Fatalf("write on the replica: %v, want ErrReplica", err)
	}

	hw := newSyncHandler()
	waiting := open(replicaDSN(c)+"&_migrations_replica=wait", hw)
	done := make(chan error, 1)
	go func() {
		var n int
		done <- waiting.QueryRowContext(ctx, `SELECT count(*) FROM t2`).Scan(&n)
	}()
wait:
	for {
		select {
		case msg := <-hw.seen:
			if strings.Contains(msg, "waiting for the primary") {
				break wait
			}
		case err := <-done:
			t.Fatalf("the waiting open returned (%v) before the primary migrated", err)
		}
	}
	// The primary's process migrates at its first connect.
	pdb := open("file:"+c.Primary.Path("app.db")+"?_journal_mode=WAL", newSyncHandler())
	if err := pdb.PingContext(ctx); err != nil {
		t.Fatalf("migration on the primary: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("read of the migrated table on the replica after the wait: %v", err)
	}
}

// TestLiteFSFailover: a process on the primary holds the lane inside a
// transaction; the primary stops; the replica is promoted; the new
// primary's first writer takes the lane at once, as a dead holder's (the
// former primary's process is alive, on another "host": each node's
// processes have their own boot id), not degraded, at an epoch above the
// former holder's, and its writes commit. Before the fix to the test's
// host identities (and on one host with the setup) the writer
// waited the whole _lease_wait and then wrote without the lease.
func TestLiteFSFailover(t *testing.T) {
	c := litefstest.Start(t)
	liteFSDB(t, c)
	a := spawn(t, "litefs-node", "file:"+c.Primary.Path("app.db")+"?_journal_mode=WAL",
		"CLEOLEASE_TEST_BOOT_ID=host-node1", "TMPDIR="+testdir.New(t))
	a.next(t, "READY")
	a.send("acquire")
	held := strings.Fields(a.next(t, "HELD"))
	epochA, _ := strconv.ParseInt(held[0], 10, 64)
	a.send("begin a1")
	a.next(t, "INTX")
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)

	c.Primary.Stop()
	c.Replica.Promote()

	// _lease_wait=1h: a grant that waited for the former holder would
	// not come within the test's time; one made without the lease says
	// degraded.
	b := spawn(t, "litefs-node", replicaDSN(c)+"&_lease_wait=1h",
		"CLEOLEASE_TEST_BOOT_ID=host-node2", "TMPDIR="+testdir.New(t))
	b.next(t, "READY")
	b.send("acquire")
	got := strings.Fields(b.next(t, "HELD"))
	epochB, _ := strconv.ParseInt(got[0], 10, 64)
	if got[1] != "false" {
		t.Fatalf("the new primary's grant is degraded (epoch %s): a write without the lease", got[0])
	}
	if epochB <= epochA {
		t.Fatalf("new primary's epoch %d, want above the former holder's %d", epochB, epochA)
	}
	b.send("stats")
	if st := strings.Fields(b.next(t, "STATS")); st[0] != "1" || st[1] != "0" {
		t.Fatalf("new primary's reclaims from dead holders %s, degraded grants %s; want 1, 0", st[0], st[1])
	}
	b.send("tx b1")
	if res := b.next(t, "RES"); res != "ok" {
		t.Fatalf("the new primary's write: %s", res)
	}
	raw, err := sql.Open("sqlite3", "file:"+c.Replica.Path("app.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var items string
	if err := raw.QueryRow(`SELECT group_concat(v || '@' || epoch) FROM items`).Scan(&items); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("b1@%d", epochB); items != want {
		t.Fatalf("items on the new primary %q, want %q (the former primary's open transaction never committed)", items, want)
	}
}

// TestLiteFSFailoverOneHost is the setup: both nodes on this
// kernel with no host identity of their own and one shared
// _lease_sidecar_dir, so the former primary's holder, alive, looks alive
// (its pid and start time match) and no liveness lock proves otherwise.
// The new primary's writer must not go ahead without the lease: it fails
// instead of making a degraded grant, and nothing is written. Before the
// fix it waited _lease_wait and then wrote without the lease. Since issue
// 28 a given directory is proven too (lease/sidecarproof.go): the two
// nodes' databases have different paths and identities, so their liveness
// files have different names in the shared directory and neither process
// sees the other's — the new primary's writer is refused with
// ErrSidecarDir (after waiting TTL/2 for processes that might adopt its
// new nonce) while the former holder's token is fresh; ErrLeaseUnavailable
// (at _lease_wait) once it has gone stale.
func TestLiteFSFailoverOneHost(t *testing.T) {
	c := litefstest.Start(t)
	liteFSDB(t, c)
	sc := testdir.New(t)
	a := spawn(t, "litefs-node", "file:"+c.Primary.Path("app.db")+"?_journal_mode=WAL&_lease_sidecar_dir="+sc)
	a.next(t, "READY")
	a.send("acquire")
	a.next(t, "HELD")
	a.send("begin a1")
	a.next(t, "INTX")
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)

	c.Primary.Stop()
	c.Replica.Promote()

	b := spawn(t, "litefs-node", replicaDSN(c)+"&_lease_wait=200ms&_lease_sidecar_dir="+sc)
	b.next(t, "READY")
	b.send("tx b1")
	if res := b.next(t, "RES"); !strings.Contains(res, cleolease.ErrSidecarDir.Error()) && !strings.Contains(res, cleolease.ErrLeaseUnavailable.Error()) {
		t.Fatalf("the new primary's write while the former holder looks alive: %q; want ErrSidecarDir or ErrLeaseUnavailable", res)
	}
	b.send("stats")
	if st := strings.Fields(b.next(t, "STATS")); st[1] != "0" {
		t.Fatalf("%s degraded grants on the new primary, want 0", st[1])
	}
	raw, err := sql.Open("sqlite3", "file:"+c.Replica.Path("app.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d items on the new primary (%v), want 0: nothing written without the lease", n, err)
	}
}

// TestLiteFSFailoverLostEpochs: grants the replica never received are not
// handed out again after a failover. The replica stops (so it misses what
// follows), the former primary's process releases its lease, takes it
// again and commits under the new epoch; the primary stops, and the
// replica, promoted with the older row, grants the lane at an epoch above
// every epoch the former primary issued. Before the fix the new primary
// handed out the row's epoch + 1: the very epoch the lost grant had.
func TestLiteFSFailoverLostEpochs(t *testing.T) {
	c := litefstest.Start(t)
	liteFSDB(t, c)
	a := spawn(t, "litefs-node", "file:"+c.Primary.Path("app.db")+"?_journal_mode=WAL&_lease_linger=0",
		"CLEOLEASE_TEST_BOOT_ID=host-node1", "TMPDIR="+testdir.New(t))
	a.next(t, "READY")
	a.send("acquire")
	e1, _ := strconv.ParseInt(strings.Fields(a.next(t, "HELD"))[0], 10, 64)
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)

	c.Replica.Stop()
	a.send("release")
	a.next(t, "RELEASED")
	a.send("acquire")
	e2, _ := strconv.ParseInt(strings.Fields(a.next(t, "HELD"))[0], 10, 64)
	a.send("tx lost")
	if res := a.next(t, "RES"); res != "ok" {
		t.Fatalf("the former primary's write: %s", res)
	}
	if e2 <= e1 {
		t.Fatalf("the former primary's second epoch %d, want above %d", e2, e1)
	}

	c.Primary.Stop()
	c.Replica.Promote()
	b := spawn(t, "litefs-node", replicaDSN(c), "CLEOLEASE_TEST_BOOT_ID=host-node2", "TMPDIR="+testdir.New(t))
	b.next(t, "READY")
	b.send("acquire")
	eB, _ := strconv.ParseInt(strings.Fields(b.next(t, "HELD"))[0], 10, 64)
	if eB <= e2 {
		t.Fatalf("the new primary granted epoch %d, not above the former primary's lost epoch %d (its copy had %d)", eB, e2, e1)
	}
}
