package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// rawCallbacks are callbacks an application registers through
// sql.Conn.Raw on one connection: an update hook that logs each changed
// table, and an authorizer that denies every insert, update and delete of
// a table other than t (and logs the denial).
type rawCallbacks struct {
	mu  sync.Mutex
	log []string
}

func (r *rawCallbacks) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *rawCallbacks) seen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, " ")
}

// register registers the callbacks on sc.
func (r *rawCallbacks) register(sc *sqlite3.SQLiteConn) {
	sc.RegisterUpdateHook(func(op int, db, table string, rowid int64) { r.add("update:" + table) })
	sc.RegisterAuthorizer(func(op int, arg1, _, _ string) int {
		switch op {
		case sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE:
			if arg1 != "t" {
				r.add("denied:" + arg1)
				return sqlite3.SQLITE_DENY
			}
		}
		return sqlite3.SQLITE_OK
	})
}

// rawConn opens a connection of db and registers r's callbacks on it
// through sql.Conn.Raw: the native *sqlite3.SQLiteConn directly under
// go-sqlite3, through cleolease.Conn's SQLiteConn under cleolease.
func rawConn(t *testing.T, db *sql.DB, r *rawCallbacks) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	err = c.Raw(func(dc any) error {
		switch x := dc.(type) {
		case *sqlite3.SQLiteConn:
			r.register(x)
		case cleolease.Conn:
			r.register(x.SQLiteConn())
		default:
			return fmt.Errorf("Raw gave %T", dc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// counters reads changes(), total_changes() and last_insert_rowid() on q.
func counters(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) string {
	t.Helper()
	var a, b, c int64
	if err := q.QueryRowContext(context.Background(), `SELECT changes(), total_changes(), last_insert_rowid()`).Scan(&a, &b, &c); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("changes=%d total=%d rowid=%d", a, b, c)
}

// The callbacks an application registers through sql.Conn.Raw see what
// they see under go-sqlite3 alone (issue 38 item 4): no lease row in the
// update hook, no lease write for the authorizer to deny, the same
// changes(), total_changes() and last_insert_rowid() — whether the write
// finds its lane free (a claim inside the transaction, where the
// connection carries no callbacks) or ends its turn while another process
// waits (the grant written inside the commit, likewise). A connection the
// application reached claims and hands off on the engine's own connection.
func TestRawCallbacksSeeWhatTheBaseShows(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	run := func(db *sql.DB, waiter func()) (string, string) {
		var r rawCallbacks
		if _, err := db.Exec(`CREATE TABLE t(who TEXT)`); err != nil {
			t.Fatal(err)
		}
		c := rawConn(t, db, &r)
		var out []string
		// A lone write: its lane is free.
		if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES ('lone')`); err != nil {
			t.Fatalf("lone write: %v", err)
		}
		out = append(out, counters(t, c))
		// A transaction that ends its turn while another process waits.
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO t VALUES ('parent')`); err != nil {
			t.Fatal(err)
		}
		waiter()
		out = append(out, counters(t, tx))
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		out = append(out, counters(t, c))
		return strings.Join(out, "; "), r.seen()
	}
	raw, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "raw.db")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	wantCounters, wantSeen := run(raw, func() {})

	path := filepath.Join(dir, "cl.db")
	db := openLeased(t, "file:"+path)
	var w *child
	gotCounters, gotSeen := run(db, func() {
		w = startChild(t, "hc-write", "file:"+path)
		eventually(t, "the waiter to register with this process", func() bool {
			st, err := cleolease.Status(ctx, db)
			return err == nil && len(st) == 1 && len(st[0].Waiters) == 1 && st[0].Waiters[0].Source == "holder"
		})
	})
	if got := w.expect("ok"); !strings.HasPrefix(got, "confirmed=") {
		t.Fatalf("waiter: ok %s", got)
	}
	if gotCounters != wantCounters || gotSeen != wantSeen {
		t.Fatalf("through Raw under cleolease:\n  counters %s\n  callbacks %q\nunder go-sqlite3:\n  counters %s\n  callbacks %q",
			gotCounters, gotSeen, wantCounters, wantSeen)
	}
}
