package ncruces_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/writer"
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

// register registers the callbacks on c, ncruces's connection.
func (r *rawCallbacks) register(c *sqlite3.Conn) error {
	c.UpdateHook(func(_ sqlite3.AuthorizerActionCode, _, table string, _ int64) { r.add("update:" + table) })
	return c.SetAuthorizer(func(op sqlite3.AuthorizerActionCode, arg1, _, _, _ string) sqlite3.AuthorizerReturnCode {
		switch op {
		case sqlite3.AUTH_INSERT, sqlite3.AUTH_UPDATE, sqlite3.AUTH_DELETE:
			if arg1 != "t" {
				r.add("denied:" + arg1)
				return sqlite3.AUTH_DENY
			}
		}
		return sqlite3.AUTH_OK
	})
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

// The callbacks an application registers through sql.Conn.Raw (and Raw's
// *sqlite3.Conn) see what they see under ncruces alone: no lease row in
// the update hook, no lease write for the authorizer to deny, the same
// changes(), total_changes() and last_insert_rowid() — whether the write
// finds its lane free or ends its turn while another process waits (the
// root module's TestRawCallbacksSeeWhatTheBaseShows over go-sqlite3).
func TestRawCallbacksSeeWhatTheBaseShows(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	run := func(db *sql.DB, waiter func()) (string, string) {
		var r rawCallbacks
		if _, err := db.Exec(`CREATE TABLE t(who TEXT); ` + counterSchema); err != nil {
			t.Fatal(err)
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.Raw(func(dc any) error {
			rc, ok := dc.(interface{ Raw() *sqlite3.Conn })
			if !ok {
				return fmt.Errorf("Raw gave %T", dc)
			}
			return r.register(rc.Raw())
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES ('lone')`); err != nil {
			t.Fatalf("lone write: %v", err)
		}
		out = append(out, counters(t, c))
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
	raw, err := sql.Open(rawDriver, effectiveDSN(t, fileDSN(filepath.Join(dir, "raw.db"))))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	wantCounters, wantSeen := run(raw, func() {})

	path := filepath.Join(dir, "cl.db")
	db := open(t, "file:"+path)
	var w *proctest.Child
	gotCounters, gotSeen := run(db, func() {
		w = proctest.Start(t, roleEnv+"=increment", "CLEOLEASE_DB="+path, "CLEOLEASE_N=1", proctest.GoraceNoExitSleep())
		proctest.Eventually(t, "the waiter to register with this process", func() bool {
			st, err := writer.Status(ctx, db)
			return err == nil && len(st) == 1 && len(st[0].Waiters) == 1 && st[0].Waiters[0].Source == "holder"
		})
	})
	if got := w.Expect(""); got != "done" {
		t.Fatalf("waiter: %q", got)
	}
	if gotCounters != wantCounters || gotSeen != wantSeen {
		t.Fatalf("through Raw under cleolease:\n  counters %s\n  callbacks %q\nunder ncruces:\n  counters %s\n  callbacks %q",
			gotCounters, gotSeen, wantCounters, wantSeen)
	}
}
