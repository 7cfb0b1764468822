package modernc_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/modernc"
	"github.com/cleocode/cleolease/writer"
)

// registerRawCallbacks registers, on modernc's own connection (what
// sql.Conn.Raw passes under modernc, ModerncConn's under cleolease), a
// pre-update hook that logs each changed table to l and an authorizer that
// denies every insert, update and delete of a table other than t (and
// logs the denial).
func registerRawCallbacks(l *basetest.CallbackLog) func(any) error {
	return func(dc any) error {
		if m, ok := dc.(interface{ ModerncConn() driver.Conn }); ok {
			dc = m.ModerncConn()
		}
		h, ok := dc.(sqlite.HookRegisterer)
		a, ok2 := dc.(sqlite.AuthorizerRegisterer)
		if !ok || !ok2 {
			return fmt.Errorf("%T registers no hooks or authorizer", dc)
		}
		h.RegisterPreUpdateHook(func(d sqlite.SQLitePreUpdateData) { l.Add("update:" + d.TableName) })
		return a.RegisterAuthorizer(func(op sqlite.AuthorizerActionCode, arg1, _, _, _ string) sqlite.AuthorizerReturnCode {
			switch op {
			case sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete:
				if arg1 != "t" {
					l.Add("denied:" + arg1)
					return sqlite.AuthorizerDeny
				}
			}
			return sqlite.AuthorizerOK
		})
	}
}

// The root module's TestRawCallbacksSeeWhatTheBaseShows over modernc: the
// callbacks an application registers through sql.Conn.Raw (and
// ModerncConn) see what they see under modernc alone.
func TestRawCallbacksSeeWhatTheBaseShows(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	const schema = `CREATE TABLE t(who TEXT); CREATE TABLE counter(v INTEGER); INSERT INTO counter VALUES (0); CREATE TABLE log(v INTEGER)`
	raw, err := sql.Open("sqlite", effectiveDSN(t, "file:"+filepath.Join(dir, "raw.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var rawLog, clLog basetest.CallbackLog
	wantCounters, wantSeen := basetest.RawCallbacksRun(t, raw, schema, &rawLog, registerRawCallbacks(&rawLog), func() {})

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
		t.Fatalf("through Raw under cleolease:\n  counters %s\n  callbacks %q\nunder modernc:\n  counters %s\n  callbacks %q",
			gotCounters, gotSeen, wantCounters, wantSeen)
	}
}
