//go:build sqlite_trace || trace

package cleolease_test

import (
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
)

// TestUserTraceOnlyOnUserConnections: a trace callback set by the base
// driver's ConnectHook (go-sqlite3's SetTrace, built with sqlite_trace)
// runs only for statements on the pool's connection, never for the lease
// engine's or the migrations' (go test -tags sqlite_trace).
func TestUserTraceOnlyOnUserConnections(t *testing.T) {
	var (
		mu    sync.Mutex
		stmts = map[*sqlite3.SQLiteConn][]string{}
	)
	trace := func(_ *callbackLog, c *sqlite3.SQLiteConn) {
		err := c.SetTrace(&sqlite3.TraceConfig{
			EventMask: sqlite3.TraceStmt | sqlite3.TraceProfile | sqlite3.TraceRow,
			Callback: func(info sqlite3.TraceInfo) int {
				mu.Lock()
				stmts[c] = append(stmts[c], info.StmtOrTrigger)
				mu.Unlock()
				return 0
			},
		})
		if err != nil {
			t.Error(err)
		}
	}
	raw, cl := &callbackLog{}, &callbackLog{}
	_, clDB, _, _ := openHookTwins(t, "", raw, cl, trace, func(c *cleolease.Config) {
		c.MigrationsFS = fstest.MapFS{"1_m.up.sql": {Data: []byte(`CREATE TABLE m(v)`)}, "1_m.down.sql": {Data: []byte(`DROP TABLE m`)}}
	})
	callbackOps(clDB)
	user := poolConn(t, clDB)
	clDB.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(stmts[user], `INSERT INTO t(y) VALUES ('a')`) {
		t.Fatalf("the pool's connection traced %q, without the user's INSERT", stmts[user])
	}
	for c, s := range stmts {
		if c != user {
			t.Errorf("the trace callback ran on a connection the pool never handed out: %q", s)
		}
	}
}
