package compat_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	"github.com/cleocode/cleolease"
)

// Note is a bun model; its ID comes back through INSERT … RETURNING.
type Note struct {
	bun.BaseModel `bun:"table:notes"`

	ID     int64 `bun:",pk,autoincrement"`
	PID    int   `bun:",notnull"`
	Worker int   `bun:",notnull"`
	Seq    int   `bun:",notnull"`
	Kind   string
}

// Tally is a row every process increments inside RunInTx.
type Tally struct {
	bun.BaseModel `bun:"table:tallies"`

	Name string `bun:",pk"`
	N    int    `bun:",notnull"`
}

// openBun is how an application opens bun on cleolease.
func openBun(driver, dsn string) (*bun.DB, error) {
	sqldb, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

func init() { roles["bun"] = bunChild }

// bunChild is plain bun code on a file no process has touched yet. Every
// process creates the tables (IF NOT EXISTS) and seeds the tally (ON
// CONFLICT DO NOTHING) at once; then each worker runs N iterations of: a
// model insert (its ID read back through RETURNING), a bulk insert of
// three models every fifth iteration, and RunInTx that reads the tally,
// writes it back incremented and inserts a note.
func bunChild(ctx context.Context, a childArgs) (report, error) {
	var r report
	db, err := openBun(a.Driver, a.DSN)
	if err != nil {
		return r, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return r, err
	}
	if err := ready(); err != nil {
		return r, err
	}
	for _, m := range []any{(*Note)(nil), (*Tally)(nil)} {
		if _, err := db.NewCreateTable().Model(m).IfNotExists().Exec(ctx); err != nil {
			return r, fmt.Errorf("create table: %w", err)
		}
	}
	if _, err := db.NewInsert().Model(&Tally{Name: "total"}).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
		return r, fmt.Errorf("seed tally: %w", err)
	}
	pid := os.Getpid()
	ops := make([]report, a.Workers)
	runWorkers(a, func(w int) {
		r := &ops[w]
		for seq := range a.N {
			n := Note{PID: pid, Worker: w, Seq: seq, Kind: "single"}
			if _, err := db.NewInsert().Model(&n).Exec(ctx); err != nil {
				r.fail("insert", err)
				continue
			} else if n.ID == 0 {
				r.fail("insert", fmt.Errorf("no ID came back"))
			} else {
				r.add("insert")
			}
			if seq%5 == 0 {
				bulk := []Note{{PID: pid, Worker: w, Seq: seq, Kind: "bulk"}, {PID: pid, Worker: w, Seq: seq, Kind: "bulk"}, {PID: pid, Worker: w, Seq: seq, Kind: "bulk"}}
				if _, err := db.NewInsert().Model(&bulk).Exec(ctx); err != nil {
					r.fail("bulk insert", err)
				} else if bulk[2].ID == 0 {
					r.fail("bulk insert", fmt.Errorf("no IDs came back"))
				} else {
					r.add("bulk")
				}
			}
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				var t Tally
				if err := tx.NewSelect().Model(&t).Where("name = ?", "total").Scan(ctx); err != nil {
					return err
				}
				t.N++
				if _, err := tx.NewUpdate().Model(&t).WherePK().Exec(ctx); err != nil {
					return err
				}
				_, err := tx.NewInsert().Model(&Note{PID: pid, Worker: w, Seq: seq, Kind: "tx"}).Exec(ctx)
				return err
			})
			if err != nil {
				r.fail("RunInTx", err)
			} else {
				r.add("tx")
			}
			got, err := db.NewSelect().Model((*Note)(nil)).Where("pid = ? AND worker = ? AND kind = ?", pid, w, "single").Count(ctx)
			if err != nil {
				r.fail("count", err)
			} else if got != int64(seq+1) {
				r.fail("count", fmt.Errorf("worker %d sees %d of its notes after %d inserts", w, got, seq+1))
			}
		}
	})
	for _, o := range ops {
		r.merge(o)
	}
	r.collectLease(ctx, a, db.DB)
	return r, nil
}

// TestBunMultiProcess: 4 processes × 2 goroutines of unchanged bun code on
// a new file (concurrent CREATE TABLE IF NOT EXISTS and seeding, model and
// bulk inserts, RunInTx read-modify-write): no errors, exact counts.
func TestBunMultiProcess(t *testing.T) {
	t.Parallel()
	_, dsn := tempDSN(t)
	r := runProcs(t, "bun", childArgs{DSN: dsn, Procs: 4, Workers: 2, N: 40})
	r.requireClean(t)
	r.requireLeased(t, 2*r.args.Workers*r.args.N) // an insert and RunInTx per iteration

	a := r.args
	workers := a.Procs * a.Workers
	bulkPerWorker := (a.N + 4) / 5
	for op, want := range map[string]int{
		"insert": workers * a.N,
		"bulk":   workers * bulkPerWorker,
		"tx":     workers * a.N,
	} {
		if got := r.total(op); got != want {
			t.Errorf("children report %d %s, want %d", got, op, want)
		}
	}

	db, err := openBun("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var notes []Note
	if err := db.NewSelect().Model(&notes).Order("id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if want := workers * (a.N + 3*bulkPerWorker + a.N); len(notes) != want {
		t.Errorf("%d notes, want %d", len(notes), want)
	}
	var tally Tally
	if err := db.NewSelect().Model(&tally).Where("name = ?", "total").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if tally.N != workers*a.N {
		t.Errorf("tally = %d, want %d", tally.N, workers*a.N)
	}
	owners := make([]int, len(notes))
	for i, n := range notes {
		owners[i] = n.PID
	}
	requireInterleaved(t, r, owners)
}

// TestBunReadOnlyTx backs the README's bun note: RunInTx takes the lease
// (one grant) and a ReadOnly RunInTx takes none and refuses writes, after
// which the (single, reused) connection writes normally again.
func TestBunReadOnlyTx(t *testing.T) {
	t.Parallel()
	_, dsn := tempDSN(t)
	db, err := openBun("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.NewCreateTable().Model((*Note)(nil)).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	grants := func() int64 {
		t.Helper()
		st, err := cleolease.Stats(ctx, db.DB)
		if err != nil {
			t.Fatal(err)
		}
		return st.Grants
	}

	before := grants()
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(&Note{Kind: "rw"}).Exec(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := grants(); g != before+1 {
		t.Errorf("RunInTx took %d lease grants, want 1", g-before)
	}

	before = grants()
	err = db.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*Note)(nil)).Count(ctx)
		if err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("read-only RunInTx sees %d notes, want 1", n)
		}
		_, err = tx.NewInsert().Model(&Note{Kind: "ro"}).Exec(ctx)
		if err == nil {
			t.Error("insert inside a ReadOnly RunInTx succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := grants(); g != before {
		t.Errorf("ReadOnly RunInTx took %d lease grants, want none", g-before)
	}
	if _, err := db.NewInsert().Model(&Note{Kind: "after"}).Exec(ctx); err != nil {
		t.Errorf("insert after the ReadOnly transaction: %v", err)
	}
	n, err := db.NewSelect().Model((*Note)(nil)).Count(ctx)
	if err != nil || n != 2 {
		t.Errorf("%d notes (%v), want 2", n, err)
	}
}
