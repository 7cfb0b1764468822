package cleolease_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/cleocode/cleolease"
)

// TestErrorsFromOnePlace: every error a user of the root package meets is
// testable with errors.Is against a value of this package (no import of
// package lease), and Stats, Status and Break return this package's types.
func TestErrorsFromOnePlace(t *testing.T) {
	ctx := context.Background()
	path := dtPath(t)
	db := dtOpen(t, "file:"+path+"?_lease_wait=50ms")
	dtExec(t, db, "CREATE TABLE t (x)")

	t.Run("Break of a live holder", func(t *testing.T) {
		l, err := cleolease.AcquireLease(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release()
		var h *cleolease.HolderStatus
		h, err = cleolease.Break(ctx, db, "main", "default", false)
		var le *cleolease.LeaseError
		if !errors.Is(err, cleolease.ErrHolderAlive) || !errors.As(err, &le) || le.Lane != "default" {
			t.Fatalf("Break: %v (%T); want a *LeaseError wrapping cleolease.ErrHolderAlive", err, err)
		}
		if h == nil || !h.Alive {
			t.Fatalf("Break returned holder %+v; want the live holder", h)
		}
	})

	t.Run("Stats and Status types", func(t *testing.T) {
		var st cleolease.LeaseStats
		st, err := cleolease.Stats(ctx, db)
		if err != nil || st.Grants == 0 {
			t.Fatalf("Stats: %+v, %v", st, err)
		}
		var lanes []cleolease.LaneStatus
		if lanes, err = cleolease.Status(ctx, db); err != nil || len(lanes) == 0 {
			t.Fatalf("Status: %+v, %v", lanes, err)
		}
		var _ []cleolease.WaiterStatus = lanes[0].Waiters
	})

	t.Run("not a cleolease database", func(t *testing.T) {
		raw := dtRaw(t, path)
		if _, err := cleolease.Stats(ctx, raw); !errors.Is(err, cleolease.ErrNotCleolease) {
			t.Fatalf("Stats on a go-sqlite3 DB: %v; want ErrNotCleolease", err)
		}
	})

	t.Run("no lease", func(t *testing.T) {
		off := dtOpen(t, "file:"+path+"?_lease_mode=off")
		if _, err := cleolease.Status(ctx, off); !errors.Is(err, cleolease.ErrNoLease) {
			t.Fatalf("Status with _lease_mode=off: %v; want ErrNoLease", err)
		}
		if _, err := cleolease.AcquireLease(cleolease.WithoutLease(ctx), db); !errors.Is(err, cleolease.ErrNoLease) {
			t.Fatalf("AcquireLease(WithoutLease): %v; want ErrNoLease", err)
		}
	})

	t.Run("connector closed", func(t *testing.T) {
		cfg, err := cleolease.ParseDSN("file:" + path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cleolease.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		cdb := sql.OpenDB(c)
		defer cdb.Close()
		if err := cdb.PingContext(ctx); !errors.Is(err, cleolease.ErrConnectorClosed) {
			t.Fatalf("Ping after Close: %v; want ErrConnectorClosed", err)
		}
	})
}
