package ncruces_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/writer"
)

// registerRawCallbacks registers, on ncruces's connection (Raw's
// *sqlite3.Conn, under ncruces and under cleolease), an update hook that
// logs each changed table to l and an authorizer that denies every
// insert, update and delete of a table other than t (and logs the
// denial).
func registerRawCallbacks(l *basetest.CallbackLog) func(any) error {
	return func(dc any) error {
		rc, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return fmt.Errorf("Raw gave %T", dc)
		}
		c := rc.Raw()
		c.UpdateHook(func(_ sqlite3.AuthorizerActionCode, _, table string, _ int64) { l.Add("update:" + table) })
		return c.SetAuthorizer(func(op sqlite3.AuthorizerActionCode, arg1, _, _, _ string) sqlite3.AuthorizerReturnCode {
			switch op {
			case sqlite3.AUTH_INSERT, sqlite3.AUTH_UPDATE, sqlite3.AUTH_DELETE:
				if arg1 != "t" {
					l.Add("denied:" + arg1)
					return sqlite3.AUTH_DENY
				}
			}
			return sqlite3.AUTH_OK
		})
	}
}

// The root module's TestRawCallbacksSeeWhatTheBaseShows over ncruces: the
// callbacks an application registers through sql.Conn.Raw (and Raw's
// *sqlite3.Conn) see what they see under ncruces alone.
func TestRawCallbacksSeeWhatTheBaseShows(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	schema := `CREATE TABLE t(who TEXT); ` + counterSchema
	raw, err := sql.Open(rawDriver, effectiveDSN(t, fileDSN(filepath.Join(dir, "raw.db"))))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var rawLog, clLog basetest.CallbackLog
	wantCounters, wantSeen := basetest.RawCallbacksRun(t, raw, schema, &rawLog, registerRawCallbacks(&rawLog), func() {})

	path := filepath.Join(dir, "cl.db")
	db := open(t, "file:"+path)
	var w *proctest.Child
	gotCounters, gotSeen := basetest.RawCallbacksRun(t, db, schema, &clLog, registerRawCallbacks(&clLog), func() {
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
