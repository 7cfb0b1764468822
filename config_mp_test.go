package cleolease_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

func init() {
	roles["config-literal"] = roleConfigLiteral
}

// roleConfigLiteral opens CLEOLEASE_DSN the way the README's Config
// literal does — cleolease.OpenDB(&cleolease.Config{SQLiteDSN: …,
// MigrationsFS: …}), nothing else set — says "READY" (or "ERR …"), and on
// "tx" inserts one item in a transaction and reports "RES outcome" and
// "DEGRADED n" (the degraded grants counted so far).
func roleConfigLiteral() int {
	ctx := context.Background()
	db, err := cleolease.OpenDB(&cleolease.Config{SQLiteDSN: os.Getenv("CLEOLEASE_DSN"), MigrationsFS: os.DirFS(os.Getenv("CLEOLEASE_MIGDIR"))})
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		say("ERR", err)
		return 1
	}
	defer db.Close()
	say("READY")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "tx" {
			say("ERR unknown command", in.Text())
			continue
		}
		err := func() error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, insertItem, "literal", "default"); err != nil {
				tx.Rollback()
				return err
			}
			return tx.Commit()
		}()
		say("RES", outcome(err))
		st, err := cleolease.Stats(ctx, db)
		if err != nil {
			say("ERR", err)
			continue
		}
		say("DEGRADED", st.Degraded)
	}
	return 0
}

// TestConfigLiteralWriterWaits: the README's literal
// cleolease.OpenDB(&cleolease.Config{SQLiteDSN: "file:app.db", MigrationsFS:
// sub}) opens, runs its migrations, and a write that finds another process
// holding the lane waits for it instead of degrading at once (issue 16,
// item 1: the literal failed to open, and with the fields filled in one by
// one its zero Wait made every contended write a silent degraded grant).
func TestConfigLiteralWriterWaits(t *testing.T) {
	path, raw := newFile(t)
	migdir := testdir.New(t)
	if err := os.WriteFile(filepath.Join(migdir, "1_note.up.sql"), []byte(`CREATE TABLE note(x);`), 0o644); err != nil {
		t.Fatal(err)
	}
	holder := spawn(t, "intercept-hold", "file:"+path)
	holder.next(t, "READY")
	holder.send("acquire")
	holder.next(t, "HELD")

	w := spawn(t, "config-literal", "file:"+path, "CLEOLEASE_MIGDIR="+migdir)
	w.next(t, "READY")
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'note'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the literal's migration: table note count %d, err %v; want 1, nil", n, err)
	}
	w.send("tx")

	obs := openLeased(t, "file:"+path)
	if err := obs.Ping(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eventually(t, "the literal's writer waits for the lane", func() bool {
		w.silent(t, "the lane was held by another process")
		lanes, err := cleolease.Status(ctx, obs)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lanes {
			if l.Scope == "main" && l.Lane == "default" && (len(l.Waiters) > 0 || l.Waiting > 0) {
				return true
			}
		}
		return false
	})
	w.silent(t, "the lane was held by another process")
	holder.send("release")
	holder.next(t, "RELEASED")
	if got := w.next(t, "RES"); got != "ok" {
		t.Fatalf("literal's write: %s, want ok", got)
	}
	if got := w.next(t, "DEGRADED"); got != "0" {
		t.Errorf("degraded grants = %s, want 0", got)
	}
	if err := raw.QueryRow(`SELECT count(*) FROM items WHERE v = 'literal' AND epoch IS NOT NULL`).Scan(&n); err != nil || n != 1 {
		t.Errorf("leased rows from the literal: %d, %v; want 1 written under an epoch", n, fmt.Sprint(err))
	}
}
