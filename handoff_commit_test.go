package cleolease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// The hand-off inside the holder's last data transaction, through the
// driver: the grant is written just before the COMMIT of a transaction
// that ends the turn while another process waits; a COMMIT that fails
// takes it back and the lane is handed off the old way; a connector whose
// base driver has a ConnectHook never carries it (its update hook would
// see the lease row).

func init() {
	roles["hc-write"] = roleHandOffWrite
}

// roleHandOffWrite inserts ('child') into t through cleolease (an
// autocommit Exec, which waits for the lane) and reports "ok
// confirmed=N" (grants it confirmed inside its own transaction) or the
// error.
func roleHandOffWrite() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		say("err", err)
		return 1
	}
	defer db.Close()
	_, err = db.Exec(`INSERT INTO t(who) VALUES ('child')`)
	if err != nil {
		say(outcome(err))
		return 0
	}
	st, err := cleolease.Stats(context.Background(), db)
	if err != nil {
		say("err", err)
		return 1
	}
	say(fmt.Sprintf("ok confirmed=%d", st.Confirmed))
	return 0
}

func TestHandOffInsideTheLastCommit(t *testing.T) {
	for _, c := range []struct {
		name        string
		connectHook bool // the base driver has a ConnectHook (with an update hook)
		deferredFK  bool // the transaction violates a deferred foreign key: COMMIT fails
	}{
		{"in-commit", false, false},
		{"deferred-fk-fails-commit", false, true},
		{"connect-hook", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(testdir.New(t), "hc.db")
			raw, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`CREATE TABLE t(who TEXT); CREATE TABLE p(id INTEGER PRIMARY KEY);
				CREATE TABLE ch(pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
				t.Fatal(err)
			}
			cfg, err := cleolease.ParseDSN("file:" + path + "?_foreign_keys=1")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var tables []string
			if c.connectHook {
				cfg.BaseDriver = &sqlite3.SQLiteDriver{ConnectHook: func(sc *sqlite3.SQLiteConn) error {
					sc.RegisterUpdateHook(func(op int, db, table string, rowid int64) {
						mu.Lock()
						tables = append(tables, table)
						mu.Unlock()
					})
					return nil
				}}
			}
			db, err := cleolease.OpenDB(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var epoch int64
			if err := tx.QueryRow(`SELECT epoch FROM _writer_leases WHERE active = 1`).Scan(&epoch); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO t(who) VALUES ('parent')`); err != nil {
				t.Fatal(err)
			}
			if c.deferredFK {
				if _, err := tx.Exec(`INSERT INTO ch VALUES (42)`); err != nil {
					t.Fatal(err)
				}
			}
			w := startChild(t, "hc-write", "file:"+path)
			eventually(t, "the waiter to register with this process", func() bool {
				st, err := cleolease.Status(ctx, db)
				return err == nil && len(st) == 1 && len(st[0].Waiters) == 1 && st[0].Waiters[0].Source == "holder"
			})
			before, err := cleolease.Stats(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			err = tx.Commit()
			var se sqlite3.Error
			if c.deferredFK != (errors.As(err, &se) && se.Code == sqlite3.ErrConstraint) {
				t.Fatalf("Commit: %v (deferred FK violation: %v)", err, c.deferredFK)
			}
			// The waiter confirms the grant inside its own transaction
			// when the grant's datagram wakes it (confirmed=1); on a
			// loaded machine its fallback poll, or the close of a
			// connection on the file, may wake it first, and it reads
			// the row that names it on its engine's connection
			// (confirmed=0). Either way it was granted the lane: the
			// hand-off count and the epoch below say so.
			if got := w.expect("ok"); got != "confirmed=1" && got != "confirmed=0" {
				t.Fatalf("waiter: ok %s, want confirmed=1 or 0", got)
			}
			after, err := cleolease.Stats(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			inCommit := !c.deferredFK && !c.connectHook
			wantWrites := before.LeaseWrites
			if !inCommit {
				wantWrites++ // the hand-off on the engine's connection
			}
			if after.Handoffs != before.Handoffs+1 || (after.PassedInCommit == before.PassedInCommit+1) != inCommit ||
				after.LeaseWrites != wantWrites || after.Lost != 0 {
				t.Fatalf("stats %+v after %+v: want one hand-off, inside the commit: %v", after, before, inCommit)
			}
			var who string
			var last int64
			if err := raw.QueryRow(`SELECT group_concat(who), (SELECT max(epoch) FROM _writer_leases) FROM t`).Scan(&who, &last); err != nil {
				t.Fatal(err)
			}
			wantWho := "parent,child"
			if c.deferredFK {
				wantWho = "child"
			}
			if who != wantWho || last != epoch+1 {
				t.Fatalf("rows %q, last epoch %d; want %q and %d (one grant after %d)", who, last, wantWho, epoch+1, epoch)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.connectHook && (len(tables) == 0 || anyPrefixed(tables, "_writer")) {
				t.Fatalf("update hook saw %v: want the user's tables only", tables)
			}
		})
	}
}

// anyPrefixed reports whether a name in tables starts with prefix.
func anyPrefixed(tables []string, prefix string) bool {
	for _, n := range tables {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
