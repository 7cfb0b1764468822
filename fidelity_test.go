package cleolease_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/internal/testdir"
)

// Tests of issue 13's drop-in fidelity that need more than a differential
// sequence: writes through Query whose rows are never closed, the base
// driver's ConnectHook on the engine's connection, the context's own error
// from a cancelled wait, and the settings under which no lease can work.

func init() {
	roles["fidelity-query-rows"] = roleQueryRows
}

// roleQueryRows issues a write through Query and never closes its rows;
// it exits (without closing anything) when told "exit".
func roleQueryRows() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		say("ERR", err)
		return 1
	}
	rows, err := db.Query(`INSERT INTO items(v) VALUES ('child') RETURNING id`)
	if err != nil {
		say("ERR", err)
		return 1
	}
	_ = rows // deliberately never closed
	say("QUERIED")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "exit" {
			os.Exit(0)
		}
	}
	return 0
}

// TestQueryWriteRowsNeverClosedMultiProcess: a process whose
// Query("INSERT … RETURNING") rows stay open does not keep another process
// from writing, and its row is there after it exits.
func TestQueryWriteRowsNeverClosedMultiProcess(t *testing.T) {
	path, raw := newFile(t)
	child := spawn(t, "fidelity-query-rows", path)
	child.next(t, "QUERIED")

	// Mode require with a bound: a lane kept by the child fails the write
	// with ErrLeaseUnavailable instead of waiting.
	db := openLeased(t, "file:"+path+"?_lease_mode=require&_lease_wait=5s")
	if _, err := db.Exec(`INSERT INTO items(v) VALUES ('parent')`); err != nil {
		t.Fatalf("write while the other process's Query rows are open: %v", err)
	}
	child.send("exit")
	if err := child.Cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	var got []string
	rows, err := raw.Query(`SELECT v FROM items ORDER BY v`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v string
		rows.Scan(&v)
		got = append(got, v)
	}
	rows.Close()
	if strings.Join(got, ",") != "child,parent" {
		t.Fatalf("items = %v, want [child parent]", got)
	}
}

// TestQueryWriteRowsNeverClosed: the same in one process and one pool, for
// a write without RETURNING, one with, and VACUUM (golang-migrate's Drop):
// the next write does not wait, and after Close every row is committed.
func TestQueryWriteRowsNeverClosed(t *testing.T) {
	for _, q := range []string{
		`INSERT INTO items(v) VALUES ('q')`,
		`INSERT INTO items(v) VALUES ('q') RETURNING id, v`,
		`VACUUM`,
	} {
		t.Run(q, func(t *testing.T) {
			testdir.LeaveOpen(t, "the rows are never closed, so their connection keeps the database open")
			path, raw := newFile(t)
			db, err := sql.Open("cleolease", "file:"+path+"?_lease_mode=require&_lease_wait=5s")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := db.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			_ = rows // never closed
			if _, err := db.Exec(`INSERT INTO items(v) VALUES ('exec')`); err != nil {
				t.Fatalf("write after an unclosed Query write: %v", err)
			}
			db.Close()
			want := 2
			if q == `VACUUM` {
				want = 1
			}
			var n int
			if err := raw.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil || n != want {
				t.Fatalf("rows after Close = %d (%v), want %d", n, err, want)
			}
		})
	}
}

// TestQueryWriteFirstStepErrorFromQuery: a write through Query that fails
// at its first step returns SQLite's error from Query, as go-sqlite3 does,
// and changes nothing.
func TestQueryWriteFirstStepErrorFromQuery(t *testing.T) {
	path, raw := newFile(t)
	db := openLeased(t, "file:"+path)
	if _, err := db.Exec(`CREATE UNIQUE INDEX ux ON items(v)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO items(v) VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	_, err := db.Query(`INSERT INTO items(v) VALUES ('b'), ('a') RETURNING v`)
	var se sqlite3.Error
	if !errors.As(err, &se) || se.ExtendedCode != sqlite3.ErrConstraintUnique {
		t.Fatalf("Query of a failing INSERT … RETURNING = %v, want SQLite's UNIQUE constraint error", err)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM items`).Scan(&n)
	if n != 1 {
		t.Fatalf("rows = %d, want 1 (the failed statement changed nothing)", n)
	}
}

// TestBaseDriverHookRunsOnEngineConnection: the ConnectHook of
// Config.BaseDriver runs on the lease engine's private connection too. The
// hook keeps the -wal file at close (SQLITE_FCNTL_PERSIST_WAL); the engine's
// connection closes last, so without the hook there the -wal would go.
func TestBaseDriverHookRunsOnEngineConnection(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	base := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		return c.SetFileControlInt("main", sqlite3.SQLITE_FCNTL_PERSIST_WAL, 1)
	}}
	cfg := cleolease.NewConfig()
	cfg.SQLiteDSN = "file:" + path
	cfg.BaseDriver = base
	db, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("-wal after Close: %v (the hook did not run on every connection)", err)
	}
}

// TestBaseDriverMismatchRefused: a second connector on the same file with
// another base driver gets ErrBaseDriverMismatch from Connect.
func TestBaseDriverMismatchRefused(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	cfg := cleolease.NewConfig()
	cfg.SQLiteDSN = "file:" + path
	first, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := first.Ping(); err != nil {
		t.Fatal(err)
	}
	same, err := sql.Open("cleolease", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	if err := same.Ping(); err != nil {
		t.Fatalf("a second connector with the default base driver: %v", err)
	}
	cfg.BaseDriver = &sqlite3.SQLiteDriver{Extensions: nil}
	other, err := cleolease.OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Ping(); !errors.Is(err, cleolease.ErrBaseDriverMismatch) {
		t.Fatalf("Ping with another base driver = %v, want ErrBaseDriverMismatch", err)
	}
}

// TestCancelledWaitIsTheContextError: a BeginTx, Exec or AcquireLease
// whose context ends while another process holds the lane returns
// ctx.Err() itself, as go-sqlite3 and database/sql do.
func TestCancelledWaitIsTheContextError(t *testing.T) {
	path, raw := newFile(t)
	holder := spawn(t, "intercept-hold", path)
	holder.next(t, "READY")
	holder.send("acquire")
	holder.next(t, "HELD")
	db := openLeased(t, "file:"+path)
	me := os.Getpid()

	calls := map[string]func(ctx context.Context) error{
		"BeginTx": func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err == nil {
				tx.Rollback()
			}
			return err
		},
		"Exec": func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, `INSERT INTO items(v) VALUES ('x')`)
			return err
		},
		"AcquireLease": func(ctx context.Context) error {
			l, err := cleolease.AcquireLease(ctx, db)
			if err == nil {
				l.Release()
			}
			return err
		},
	}
	for name, call := range calls {
		t.Run(name+"/cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			eventually(t, "the call waits in the queue", func() bool { return queued(raw, me) })
			cancel()
			if err := <-done; err != context.Canceled {
				t.Fatalf("err = %#v, want context.Canceled itself", err)
			}
		})
		t.Run(name+"/deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if err := call(ctx); err != context.DeadlineExceeded {
				t.Fatalf("err = %#v, want context.DeadlineExceeded itself", err)
			}
		})
	}
}

// TestLocklessSettingsRefused: the DSN settings under which no lease can
// work across processes are refused at sql.Open with a *DSNError that says
// _lease_mode=off allows them, and are accepted with it.
func TestLocklessSettingsRefused(t *testing.T) {
	dir := testdir.New(t)
	for _, c := range []struct{ query, param string }{
		{"?_locking_mode=EXCLUSIVE", "_locking_mode"},
		{"?_locking_mode=exclusive", "_locking_mode"},
		{"?_locking=EXCLUSIVE", "_locking"},
		{"?nolock=1", "nolock"},
		{"?vfs=unix-none", "vfs"},
		{"?vfs=unix-excl", "vfs"},
	} {
		dsn := "file:" + filepath.Join(dir, "x.db") + c.query
		_, err := sql.Open("cleolease", dsn)
		var de *cleolease.DSNError
		if !errors.As(err, &de) || de.Param != c.param || !strings.Contains(de.Reason, "_lease_mode=off") {
			t.Errorf("sql.Open(%q) = %v, want a *DSNError for %s naming _lease_mode=off", dsn, err, c.param)
			continue
		}
		db, err := sql.Open("cleolease", dsn+"&_lease_mode=off")
		if err != nil {
			t.Errorf("with _lease_mode=off: %v", err)
			continue
		}
		db.Close()
	}
	for _, ok := range []string{"?_locking_mode=NORMAL", "?nolock=0", "?vfs=unix"} {
		db, err := sql.Open("cleolease", "file:"+filepath.Join(dir, "x.db")+ok)
		if err != nil {
			t.Errorf("sql.Open with %s: %v", ok, err)
			continue
		}
		db.Close()
	}
}

// TestExclusiveLockingPragmaRefused: PRAGMA locking_mode=EXCLUSIVE on a
// leased connection is refused with ErrExclusiveLocking whichever way it
// arrives (Prepare included), and the connection stays in normal mode.
func TestExclusiveLockingPragmaRefused(t *testing.T) {
	path, _ := newFile(t)
	db := openLeased(t, "file:"+path)
	ctx := context.Background()
	for _, q := range []string{
		"PRAGMA locking_mode=EXCLUSIVE", "pragma main.locking_mode = 'exclusive'", "PRAGMA locking_mode(EXCLUSIVE)",
		"/* c */ PRAGMA locking_mode = exclusive; SELECT 1", "SELECT 1; PRAGMA locking_mode=EXCLUSIVE",
	} {
		if _, err := db.ExecContext(ctx, q); !errors.Is(err, cleolease.ErrExclusiveLocking) {
			t.Errorf("Exec(%q) = %v, want ErrExclusiveLocking", q, err)
		}
		if _, err := db.QueryContext(ctx, q); !errors.Is(err, cleolease.ErrExclusiveLocking) {
			t.Errorf("Query(%q) = %v, want ErrExclusiveLocking", q, err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, q); !errors.Is(err, cleolease.ErrExclusiveLocking) {
			t.Errorf("Tx.Exec(%q) = %v, want ErrExclusiveLocking", q, err)
		}
		tx.Rollback()
		if _, err := db.PrepareContext(ctx, q); !errors.Is(err, cleolease.ErrExclusiveLocking) {
			t.Errorf("Prepare(%q) = %v, want ErrExclusiveLocking (SQLite applies it while preparing)", q, err)
		}
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA locking_mode").Scan(&mode); err != nil || mode != "normal" {
		t.Fatalf("locking_mode = %q, %v; want normal", mode, err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA locking_mode=NORMAL"); err != nil {
		t.Fatalf("PRAGMA locking_mode=NORMAL: %v", err)
	}
}

// TestEmptyDSNSaysWhatSQLiteWouldOpen: migrations on the empty DSN are
// refused, saying that SQLite would open a private temporary on-disk
// database.
func TestEmptyDSNSaysWhatSQLiteWouldOpen(t *testing.T) {
	_, err := cleolease.OpenDB(&cleolease.Config{MigrationsFS: os.DirFS(testdir.New(t))})
	if !errors.Is(err, cleolease.ErrPrivateMemory) || !strings.Contains(err.Error(), "private temporary on-disk database") {
		t.Fatalf("OpenDB = %v, want ErrPrivateMemory saying what SQLite would open", err)
	}
}

// TestEmptyPreparedStatement: a statement prepared from text with no
// statement in it runs as the same text runs through Exec and Query (no
// rows, nothing affected). go-sqlite3 v1.14.53 crashes the process here
// (README, "Differences from go-sqlite3").
func TestEmptyPreparedStatement(t *testing.T) {
	path, _ := newFile(t)
	db := openLeased(t, "file:"+path)
	for _, q := range []string{"", "-- c", "/* x */", " ; "} {
		st, err := db.Prepare(q)
		if err != nil {
			t.Fatalf("Prepare(%q): %v", q, err)
		}
		res, err := st.Exec()
		if err != nil {
			t.Fatalf("Exec(%q): %v", q, err)
		}
		if n, err := res.RowsAffected(); n != 0 || err != nil {
			t.Errorf("RowsAffected = %d, %v", n, err)
		}
		rows, err := st.Query()
		if err != nil {
			t.Fatalf("Query(%q): %v", q, err)
		}
		if rows.Next() {
			t.Errorf("Query(%q) returned a row", q)
		}
		rows.Close()
		st.Close()
	}
}
