package lease

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/mattn"
)

// TestPrivateConnClearsDriverCallbacks: the ConnectHook of Options.Driver
// runs on the engine's private connection, what it registers for the SQL
// (a collation) stays there, and the callbacks it registers for statements
// never run for the engine's: a commit hook that vetoes every commit and an
// authorizer that denies everything leave the claim, the fencing check and
// the hand-back working, and no callback is ever called.
func TestPrivateConnClearsDriverCallbacks(t *testing.T) {
	var hooked, called atomic.Int32
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		hooked.Add(1)
		c.RegisterCommitHook(func() int { called.Add(1); return 1 })
		c.RegisterRollbackHook(func() { called.Add(1) })
		c.RegisterUpdateHook(func(int, string, string, int64) { called.Add(1) })
		c.RegisterAuthorizer(func(int, string, string, string) int { called.Add(1); return sqlite3.SQLITE_DENY })
		return c.RegisterCollation("fold", func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	}}
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Base = mattn.For(drv); o.Linger = 0 })
	ctx := context.Background()
	for range 2 {
		h, err := e.Acquire(ctx, "main", "default", AcquireOptions{Wait: 10 * time.Second, Require: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Check(ctx); err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	var same bool
	if err := e.db().QueryRowContext(ctx, `SELECT 'a' = 'A' COLLATE fold`).Scan(&same); err != nil || !same {
		t.Fatalf("the hook's collation on the engine's connection: %v, %v", same, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if hooked.Load() == 0 {
		t.Fatal("the ConnectHook never ran on the engine's connection")
	}
	if n := called.Load(); n != 0 {
		t.Fatalf("the hook's callbacks ran %d times on the engine's connection", n)
	}
}
