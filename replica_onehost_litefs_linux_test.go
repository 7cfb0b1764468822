package cleolease_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/litefstest"
)

// TestLiteFSReplicaOfOneHostPrimary: both nodes on one host with no
// parameter (what a user tries first). The primary's process recorded its
// sidecar nonce during this boot; the replica's processes derive another
// directory (another mount path and file identity). A write on the replica
// must still fail with the *ReplicaError naming the primary, not
// ErrSidecarDir (whose remedy does not make a replica writable), and a
// process whose migrations are ahead must open the replica and read.
// Before the fix all three failed with ErrSidecarDir, the open included.
func TestLiteFSReplicaOfOneHostPrimary(t *testing.T) {
	c := litefstest.Start(t)
	liteFSDB(t, c)
	ctx := context.Background()
	pdb, err := sql.Open("cleolease", "file:"+c.Primary.Path("app.db")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pdb.ExecContext(ctx, `UPDATE counter SET n = n + 1`); err != nil {
		t.Fatalf("write on the primary: %v", err)
	}
	pdb.Close() // the primary's process ends (it records its nonce and leaves)
	litefstest.WaitReplicated(t, "app.db", c.Primary, c.Replica)
	primary, ok := litefstest.PrimaryName(c.Replica)
	if !ok {
		t.Fatal("the replica has no .primary file")
	}
	check := func(what string, err error) {
		t.Helper()
		var re *cleolease.ReplicaError
		if !errors.Is(err, cleolease.ErrReplica) || !errors.As(err, &re) || re.Primary != primary {
			t.Errorf("%s on the replica: %v (%T); want a *ReplicaError naming %s", what, err, err, primary)
		}
	}
	db, err := sql.Open("cleolease", replicaDSN(c))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
	check("Exec", err)
	_, err = db.BeginTx(ctx, nil)
	check("BeginTx", err)

	cfg, err := cleolease.ParseDSN(replicaDSN(c) + "&_migrations_table=onehost_migrations")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MigrationsFS = replicaMigs
	cfg.Logger = slog.New(newSyncHandler())
	mdb, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	var n int
	if err := mdb.QueryRowContext(ctx, `SELECT n FROM counter`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read on a replica behind the migrations: %d, %v; want 1, nil", n, err)
	}
	_, err = mdb.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
	check("Exec behind the migrations", err)
}
