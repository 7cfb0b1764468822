package cleolease_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/testdir"
)

// registerRawCallbacks registers, on the connection sql.Conn.Raw passes
// (the native *sqlite3.SQLiteConn under go-sqlite3, a cleolease.Conn under
// cleolease), an update hook that logs each changed table to l and an
// authorizer that denies every insert, update and delete of a table other
// than t (and logs the denial).
func registerRawCallbacks(l *basetest.CallbackLog) func(any) error {
	return func(dc any) error {
		var sc *sqlite3.SQLiteConn
		switch x := dc.(type) {
		case *sqlite3.SQLiteConn:
			sc = x
		case cleolease.Conn:
			sc = x.SQLiteConn()
		default:
			return fmt.Errorf("Raw gave %T", dc)
		}
		sc.RegisterUpdateHook(func(op int, db, table string, rowid int64) { l.Add("update:" + table) })
		sc.RegisterAuthorizer(func(op int, arg1, _, _ string) int {
			switch op {
			case sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE:
				if arg1 != "t" {
					l.Add("denied:" + arg1)
					return sqlite3.SQLITE_DENY
				}
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	}
}

// The callbacks an application registers through sql.Conn.Raw see what
// they see under go-sqlite3 alone (issue 38 item 4): no lease row in the
// update hook, no lease write for the authorizer to deny, the same
// changes(), total_changes() and last_insert_rowid() — whether the write
// finds its lane free (a claim inside the transaction, where the
// connection carries no callbacks) or ends its turn while another process
// waits (the grant written inside the commit, likewise). A connection the
// application reached claims and hands off on the engine's own connection.
// (The same over modernc and ncruces in their modules.)
func TestRawCallbacksSeeWhatTheBaseShows(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	const schema = `CREATE TABLE t(who TEXT)`
	raw, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "raw.db")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var rawLog, clLog basetest.CallbackLog
	wantCounters, wantSeen := basetest.RawCallbacksRun(t, raw, schema, &rawLog, registerRawCallbacks(&rawLog), func() {})

	path := filepath.Join(dir, "cl.db")
	db := openLeased(t, "file:"+path)
	var w *child
	gotCounters, gotSeen := basetest.RawCallbacksRun(t, db, schema, &clLog, registerRawCallbacks(&clLog), func() {
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
