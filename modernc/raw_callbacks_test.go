package modernc_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/modernc"
	"github.com/cleocode/cleolease/writer"
)

// rawCallbacks are callbacks an application registers through
// sql.Conn.Raw on one connection: a pre-update hook that logs each changed
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

// register registers the callbacks on dc, modernc's own connection.
func (r *rawCallbacks) register(dc driver.Conn) error {
	h, ok := dc.(sqlite.HookRegisterer)
	a, ok2 := dc.(sqlite.AuthorizerRegisterer)
	if !ok || !ok2 {
		return fmt.Errorf("%T registers no hooks or authorizer", dc)
	}
	h.RegisterPreUpdateHook(func(d sqlite.SQLitePreUpdateData) { r.add("update:" + d.TableName) })
	return a.RegisterAuthorizer(func(op sqlite.AuthorizerActionCode, arg1, _, _, _ string) sqlite.AuthorizerReturnCode {
		switch op {
		case sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete:
			if arg1 != "t" {
				r.add("denied:" + arg1)
				return sqlite.AuthorizerDeny
			}
		}
		return sqlite.AuthorizerOK
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

// The callbacks an application registers through sql.Conn.Raw (and
// ModerncConn) see what they see under modernc alone: no lease row in the
// pre-update hook, no lease write for the authorizer to deny, the same
// changes(), total_changes() and last_insert_rowid() — whether the write
// finds its lane free or ends its turn while another process waits (the
// root module's TestRawCallbacksSeeWhatTheBaseShows over go-sqlite3).
func TestRawCallbacksSeeWhatTheBaseShows(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	const schema = `CREATE TABLE t(who TEXT); CREATE TABLE counter(v INTEGER); INSERT INTO counter VALUES (0); CREATE TABLE log(v INTEGER)`
	run := func(db *sql.DB, waiter func()) (string, string) {
		var r rawCallbacks
		if _, err := db.Exec(schema); err != nil {
			t.Fatal(err)
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.Raw(func(dc any) error {
			if m, ok := dc.(interface{ ModerncConn() driver.Conn }); ok {
				return r.register(m.ModerncConn())
			}
			return r.register(dc.(driver.Conn))
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
	raw, err := sql.Open("sqlite", effectiveDSN(t, "file:"+filepath.Join(dir, "raw.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	wantCounters, wantSeen := run(raw, func() {})

	// A driver of its own: this test binary's TestMain registers a
	// connection hook on modernc's default driver, and cleolease hands off
	// and claims on the engine's connection for every connection of a
	// hooked driver, reached or not.
	path := filepath.Join(dir, "cl.db")
	cfg, err := modernc.ParseDSN("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseDriver = &sqlite.Driver{}
	db, err := modernc.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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
		t.Fatalf("through Raw under cleolease:\n  counters %s\n  callbacks %q\nunder modernc:\n  counters %s\n  callbacks %q",
			gotCounters, gotSeen, wantCounters, wantSeen)
	}
}
