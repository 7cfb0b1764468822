package core

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/mattn"
	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/migrate"
	"github.com/cleocode/cleolease/writer"
)

// A LiteFS replica is imitated with the OS's answers injected: every
// connection (the lease engine's included, through the base driver's
// ConnectHook) runs with PRAGMA query_only=1, so that SQLite refuses each
// write (SQLITE_READONLY), and readPrimary gives the .primary file's
// content. The cluster tests (litefs_linux_test.go) run the same on a
// real LiteFS mount, where the refusal is SQLITE_IOERR_WRITE with EACCES.

// replicaFile makes a WAL database with table t holding one row and no
// lease tables, and returns its path.
func replicaFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(testdir.New(t), "app.db")
	sc := openRaw(t, "file:"+path+"?_journal_mode=WAL")
	if _, err := sc.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// refusingDriver is a base driver whose connections refuse every write.
func refusingDriver() sqlbase.Driver {
	return mattn.For(&sqlite3.SQLiteDriver{ConnectHook: func(sc *sqlite3.SQLiteConn) error {
		_, err := sc.Exec("PRAGMA query_only = 1", nil)
		return err
	}})
}

// injectPrimary makes readPrimary answer primary (ok false: no .primary
// file) for the test's duration.
func injectPrimary(t *testing.T, primary string, ok bool) {
	t.Helper()
	prev := readPrimary
	readPrimary = func(string) (string, bool) { return primary, ok }
	t.Cleanup(func() { readPrimary = prev })
}

// injectFS makes detectFileSystem answer info for the test's duration.
func injectFS(t *testing.T, info platform.FSInfo) {
	t.Helper()
	prev := detectFileSystem
	detectFileSystem = func(string) (platform.FSInfo, error) { return info, nil }
	t.Cleanup(func() { detectFileSystem = prev })
}

func openReplica(t *testing.T, cfg *Config) *sql.DB {
	t.Helper()
	db, err := OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func leaseTables(t *testing.T, path string) int {
	t.Helper()
	sc := openRaw(t, "file:"+path)
	defer sc.Close()
	rows, err := sc.Query(`SELECT count(*) FROM sqlite_master WHERE name IN ('_writer_leases', '_writer_queue')`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		t.Fatal(err)
	}
	return int(v[0].(int64))
}

// TestReplicaReadsAndTypedWriteErrors: on a replica with no lease tables
// yet, reads work and nothing is created; every write path — Exec,
// BeginTx, AcquireLease — fails with a *ReplicaError naming the primary,
// errors.Is ErrReplica, that still unwraps to SQLite's error. Without a
// .primary file, a refusal on a file that is not on LiteFS stays SQLite's
// own error; on LiteFS it is a replica's with no primary known.
func TestReplicaReadsAndTypedWriteErrors(t *testing.T) {
	injectPrimary(t, "node-a", true)
	path := replicaFile(t)
	db := openReplica(t, &Config{SQLiteDSN: "file:" + path, BaseDriver: refusingDriver(), Quiet: true})
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read on the replica: %d, %v; want 1, nil", n, err)
	}
	if got := leaseTables(t, path); got != 0 {
		t.Fatalf("%d lease tables after reading a replica, want 0", got)
	}
	ctx := context.Background()
	check := func(what string, err error, primary string) {
		t.Helper()
		var re *ReplicaError
		var se sqlite3.Error
		switch {
		case !errors.Is(err, ErrReplica) || !errors.As(err, &re):
			t.Errorf("%s: %v (%T), want a *ReplicaError", what, err, err)
		case re.Primary != primary || re.Path == "":
			t.Errorf("%s: primary %q, path %q; want %q and the file", what, re.Primary, re.Path, primary)
		case !errors.As(err, &se) || se.Code != sqlite3.ErrReadonly:
			t.Errorf("%s: %v does not unwrap to SQLite's refusal", what, err)
		case primary != "" && !strings.Contains(err.Error(), primary):
			t.Errorf("%s: %q does not name the primary", what, err)
		}
	}
	_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
	check("Exec", err, "node-a")
	_, err = db.BeginTx(ctx, nil)
	check("BeginTx", err, "node-a")
	_, err = writer.AcquireLease(ctx, db)
	check("AcquireLease", err, "node-a")
	_, err = db.QueryContext(ctx, `INSERT INTO t VALUES (3) RETURNING x`)
	check("Query with RETURNING", err, "node-a")
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read after the refused writes: %d, %v; want 1, nil", n, err)
	}

	t.Run("no .primary, not LiteFS", func(t *testing.T) {
		injectPrimary(t, "", false)
		db := openReplica(t, &Config{SQLiteDSN: "file:" + replicaFile(t), BaseDriver: refusingDriver(), Quiet: true})
		_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
		var se sqlite3.Error
		if errors.Is(err, ErrReplica) || !errors.As(err, &se) || se.Code != sqlite3.ErrReadonly {
			t.Fatalf("refused write off LiteFS: %v (%T), want SQLite's own error", err, err)
		}
	})
	t.Run("no .primary, on LiteFS", func(t *testing.T) {
		injectPrimary(t, "", false)
		injectFS(t, platform.FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true})
		db := openReplica(t, &Config{SQLiteDSN: "file:" + replicaFile(t), BaseDriver: refusingDriver(), Quiet: true})
		_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
		check("Exec on a LiteFS node with no primary", err, "")
	})
}

// recordHandler sends every record's message and attributes on a channel.
type recordHandler struct{ ch chan slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.ch <- r.Clone():
	default:
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

func attrsOf(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

var replicaMigrations = fstest.MapFS{
	"1_t2.up.sql":   {Data: []byte(`CREATE TABLE t2(y);`)},
	"1_t2.down.sql": {Data: []byte(`DROP TABLE t2;`)},
}

// TestReplicaBehindMigrations: a process whose migrations are ahead of
// the replica's copy opens it with a warning naming the file and both
// versions; reads work and a write gets the replica error. With
// _migrations_replica=wait the connect waits until the primary's
// migration arrives (here: applied by another connection), or fails with
// its context's error.
func TestReplicaBehindMigrations(t *testing.T) {
	injectPrimary(t, "node-a", true)
	ctx := context.Background()

	t.Run("open", func(t *testing.T) {
		path := replicaFile(t)
		logs := make(chan slog.Record, 64)
		db := openReplica(t, &Config{SQLiteDSN: "file:" + path, BaseDriver: refusingDriver(), MigrationsFS: replicaMigrations, Logger: slog.New(recordHandler{logs})})
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("read on a replica behind the migrations: %d, %v", n, err)
		}
		var warned map[string]string
		for len(logs) > 0 {
			r := <-logs
			if r.Level == slog.LevelWarn && strings.Contains(r.Message, "LiteFS replica") {
				warned = attrsOf(r)
			}
		}
		if warned == nil || warned["file"] != path || warned["database_version"] != "-1" || warned["source_version"] != "1" || warned["primary"] != "node-a" {
			t.Fatalf("warning %v; want one naming the file, both versions and the primary", warned)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (2)`); !errors.Is(err, ErrReplica) {
			t.Fatalf("write: %v, want ErrReplica", err)
		}
	})

	t.Run("wait", func(t *testing.T) {
		path := replicaFile(t)
		logs := make(chan slog.Record, 64)
		db := openReplica(t, &Config{SQLiteDSN: "file:" + path, BaseDriver: refusingDriver(), MigrationsFS: replicaMigrations,
			MigrationsReplica: ReplicaWait, Logger: slog.New(recordHandler{logs})})
		done := make(chan error, 1)
		go func() {
			var n int
			done <- db.QueryRowContext(ctx, `SELECT count(*) FROM t2`).Scan(&n)
		}()
	wait:
		for {
			select {
			case r := <-logs:
				if strings.Contains(r.Message, "waiting for the primary") {
					break wait
				}
			case err := <-done:
				t.Fatalf("the connect returned (%v) before the primary migrated", err)
			}
		}
		// The primary migrates; the replica's copy gets it.
		if err := migrate.Up(ctx, migrate.Options{DSN: "file:" + path, Base: mattn.For(nil), FS: replicaMigrations}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("read of the migrated table after the wait: %v", err)
		}
	})

	t.Run("wait bounded by the context", func(t *testing.T) {
		path := replicaFile(t)
		db := openReplica(t, &Config{SQLiteDSN: "file:" + path, BaseDriver: refusingDriver(), MigrationsFS: replicaMigrations,
			MigrationsReplica: ReplicaWait, Quiet: true})
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := db.PingContext(cctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("connect waiting for a migration that never comes: %v, want the context's deadline", err)
		}
	})
}

func openRaw(t *testing.T, dsn string) *sqlite3.SQLiteConn {
	t.Helper()
	conn, err := (&sqlite3.SQLiteDriver{}).Open(dsn)
	if err != nil {
		t.Fatalf("%s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.(*sqlite3.SQLiteConn)
}
