//go:build sqlite_preupdate_hook

package cleolease_test

import (
	"fmt"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestUserPreUpdateHookOnlyOnUserConnections: a pre-update hook registered
// by the base driver's ConnectHook (go-sqlite3 built with
// sqlite_preupdate_hook) sees what go-sqlite3's sees, nothing of the lease
// engine's bookkeeping (go test -tags sqlite_preupdate_hook).
func TestUserPreUpdateHookOnlyOnUserConnections(t *testing.T) {
	pre := func(l *callbackLog, c *sqlite3.SQLiteConn) {
		c.RegisterPreUpdateHook(func(d sqlite3.SQLitePreUpdateData) {
			l.add(c, fmt.Sprintf("preupdate(op=%d %s.%s %d→%d)", d.Op, d.DatabaseName, d.TableName, d.OldRowID, d.NewRowID))
		})
	}
	raw, cl := &callbackLog{}, &callbackLog{}
	rawDB, clDB, _, _ := openHookTwins(t, "", raw, cl, pre, nil)
	if want, got := callbackOps(rawDB), callbackOps(clDB); fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("results differ\n go-sqlite3: %q\n cleolease:  %q", want, got)
	}
	checkCallbacks(t, raw, cl, rawDB, clDB)
}
