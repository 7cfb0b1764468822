package core

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/writer"
)

// fakeFS makes detectFileSystem report info for dir (and nothing else:
// every other directory gets the real answer, so tests running alongside
// are not affected) until the test ends. It returns a counter of the
// lookups of dir.
func fakeFS(t *testing.T, dir string, info platform.FSInfo, err error) *atomic.Int64 {
	t.Helper()
	dir = fsDir(filepath.Join(dir, "x"))
	orig := detectFileSystem
	var n atomic.Int64
	detectFileSystem = func(d string) (platform.FSInfo, error) {
		if d == dir {
			n.Add(1)
			return info, err
		}
		return orig(d)
	}
	t.Cleanup(func() { detectFileSystem = orig })
	return &n
}

// logBuffer is a slog handler's output, safe for the engine's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func openWithLog(t *testing.T, dsn string) (*sql.DB, *logBuffer) {
	t.Helper()
	cfg, err := ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var buf logBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, &buf
}

// assertNoFiles fails when the refused open left the database or any
// companion file behind.
func assertNoFiles(t *testing.T, db string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm", "-journal", "-cleolease"} {
		if _, err := os.Lstat(db + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused open (lstat: %v)", db+suffix, err)
		}
	}
}

func TestDecideFileSystem(t *testing.T) {
	ctx := context.Background()
	nfs := platform.FSInfo{Name: "nfs", Network: true}
	ninep := platform.FSInfo{Name: "9p", Network: true, Note: "WSL2 mounts Windows drives (/mnt/c) over 9p"}
	fuse := platform.FSInfo{Name: "fuse.foo", FUSE: true}
	local := platform.FSInfo{Name: "ext4"}
	for _, c := range []struct {
		name    string
		info    platform.FSInfo
		policy  NetworkFS
		refused bool
		warned  string
	}{
		{"nfs default", nfs, "", true, ""},
		{"nfs refuse", nfs, NetworkFSRefuse, true, ""},
		{"nfs allow", nfs, NetworkFSAllow, false, "network filesystem"},
		{"9p refuse", ninep, NetworkFSRefuse, true, ""},
		{"fuse", fuse, NetworkFSRefuse, false, "FUSE"},
		{"fuse allow", fuse, NetworkFSAllow, false, "FUSE"},
		{"local", local, NetworkFSRefuse, false, ""},
		{"unknown", platform.FSInfo{}, NetworkFSRefuse, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&buf, nil))
			err := decideFileSystem(ctx, "/srv/data", c.info, c.policy, logger)
			var nerr *NetworkFSError
			if got := errors.As(err, &nerr); got != c.refused {
				t.Fatalf("err = %v, refused = %v, want %v", err, got, c.refused)
			}
			if c.refused {
				if !errors.Is(err, ErrNetworkFS) || nerr.Path != "/srv/data" || nerr.FSName != c.info.Name {
					t.Errorf("error %#v does not name the directory and filesystem", nerr)
				}
				if msg := err.Error(); !strings.Contains(msg, c.info.Name) || !strings.Contains(msg, "_lease_network_fs=allow") || !strings.Contains(msg, c.info.Note) {
					t.Errorf("message %q lacks the filesystem, the note or the opt-in", msg)
				}
				if buf.Len() != 0 {
					t.Errorf("a refusal also logged: %s", buf.String())
				}
				return
			}
			if c.warned == "" && buf.Len() != 0 {
				t.Errorf("logged %q, want nothing", buf.String())
			}
			if c.warned != "" && (!strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), c.warned) || !strings.Contains(buf.String(), c.info.Name)) {
				t.Errorf("log %q: want a warning about %q naming %s", buf.String(), c.warned, c.info.Name)
			}
		})
	}
	// A nil logger is silent, not a panic.
	if err := decideFileSystem(ctx, "/d", fuse, NetworkFSRefuse, nil); err != nil {
		t.Fatal(err)
	}
}

// End to end through sql.Open with the detection faked: the first connect
// is refused with the typed error before SQLite creates anything; the
// opt-in, mode off and read-only opens go through; FUSE is logged.
func TestNetworkFSRefusedAtConnect(t *testing.T) {
	dir := testdir.New(t)
	db := filepath.Join(dir, "app.db")
	lookups := fakeFS(t, dir, platform.FSInfo{Name: "9p", Network: true, Note: "WSL2 mounts Windows drives (/mnt/c, …) over 9p"}, nil)

	refused, logs := openWithLog(t, db)
	err := refused.Ping()
	var nerr *NetworkFSError
	if !errors.As(err, &nerr) || !errors.Is(err, ErrNetworkFS) {
		t.Fatalf("Ping: %v, want a *NetworkFSError", err)
	}
	if want := databaseDir(db); nerr.Path != want || nerr.FSName != "9p" || !strings.Contains(err.Error(), "/mnt/c") {
		t.Errorf("error %q (path %q, fs %q), want path %q, fs 9p, naming /mnt/c", err, nerr.Path, nerr.FSName, want)
	}
	if _, err := refused.Exec("CREATE TABLE t(x)"); !errors.As(err, &nerr) {
		t.Errorf("Exec: %v, want a *NetworkFSError", err)
	}
	assertNoFiles(t, db)
	if n := lookups.Load(); n != 1 {
		t.Errorf("the filesystem was looked up %d times, want once per connector", n)
	}
	if logs.String() != "" {
		t.Errorf("refusal logged %q", logs.String())
	}
	refused.Close()

	// The opt-in: opens, takes the lease, writes; warns once.
	allowed, logs := openWithLog(t, db+"?_lease_network_fs=allow")
	if _, err := allowed.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatalf("with _lease_network_fs=allow: %v", err)
	}
	if _, err := allowed.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if s := logs.String(); strings.Count(s, "network filesystem") != 1 || !strings.Contains(s, "fs=9p") {
		t.Errorf("log %q: want one warning naming 9p", s)
	}
	allowed.Close()

	// Mode off and read-only opens are not refused.
	off, _ := openWithLog(t, db+"?_lease_mode=off")
	var n int
	if err := off.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Errorf("_lease_mode=off: %v, n=%d", err, n)
	}
	off.Close()
	ro, _ := openWithLog(t, "file:"+db+"?mode=ro")
	if err := ro.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Errorf("mode=ro: %v, n=%d", err, n)
	}
	ro.Close()

	// Through Config, the refusal is the default too.
	cfg := NewConfig()
	cfg.SQLiteDSN = db
	cdb, err := OpenDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	if err := cdb.Ping(); !errors.As(err, &nerr) {
		t.Errorf("OpenDB(NewConfig()): %v, want a *NetworkFSError", err)
	}
}

func TestFUSEWarnsAndOpens(t *testing.T) {
	dir := testdir.New(t)
	fakeFS(t, dir, platform.FSInfo{Name: "fuse.sometool", FUSE: true}, nil)
	db, logs := openWithLog(t, filepath.Join(dir, "app.db"))
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatalf("FUSE: %v", err)
	}
	if s := logs.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "FUSE") || !strings.Contains(s, "fs=fuse.sometool") {
		t.Errorf("log %q: want a FUSE warning naming the filesystem", s)
	}
}

// When the filesystem cannot be told, the connect goes on: a missing
// directory fails with SQLite's own error, as it would without cleolease.
func TestFileSystemUnknownNotRefused(t *testing.T) {
	dir := testdir.New(t)
	n := fakeFS(t, dir, platform.FSInfo{}, platform.ErrUnsupported)
	db, _ := openWithLog(t, filepath.Join(dir, "app.db"))
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	if n.Load() == 0 {
		t.Fatal("the faked detection was not consulted")
	}
	missing, _ := openWithLog(t, filepath.Join(dir, "no", "such", "dir", "app.db"))
	err := missing.Ping()
	var nerr *NetworkFSError
	if err == nil || errors.As(err, &nerr) || !strings.Contains(err.Error(), "unable to open database file") {
		t.Errorf("missing directory: %v, want SQLite's own error", err)
	}
}

func TestNetworkFSParam(t *testing.T) {
	for _, v := range []NetworkFS{NetworkFSAllow, NetworkFSRefuse} {
		c, err := ParseDSN("a.db?_lease_network_fs=" + string(v))
		if err != nil || c.NetworkFS != v {
			t.Errorf("%s: %v, %q", v, err, c.NetworkFS)
		}
	}
	if c, _ := ParseDSN("a.db?_lease_network_fs=allow"); c.FormatDSN() != "a.db?_lease_network_fs=allow" {
		t.Errorf("FormatDSN = %q", c.FormatDSN())
	}
	if c, _ := ParseDSN("a.db?_lease_network_fs=refuse"); c.FormatDSN() != "a.db" {
		t.Errorf("FormatDSN of the default = %q", c.FormatDSN())
	}
	var derr *DSNError
	if _, err := ParseDSN("a.db?_lease_network_fs=yes"); !errors.As(err, &derr) || derr.Param != "_lease_network_fs" {
		t.Errorf("bad value: %v", err)
	}
	cfg := NewConfig()
	cfg.SQLiteDSN = "a.db"
	cfg.NetworkFS = "" // a hand-built Config: empty means refuse
	if _, err := NewConnector(cfg, dialect, nil); err != nil {
		t.Errorf("empty NetworkFS: %v", err)
	}
	cfg.NetworkFS = "sometimes"
	var cerr *ConfigError // a Config's error names the Config field (issue 16, item 1)
	if _, err := NewConnector(cfg, dialect, nil); !errors.As(err, &cerr) || cerr.Field != "NetworkFS" {
		t.Errorf("bad NetworkFS: %v", err)
	}
}

// TestNetworkFSOptInNeverReclaimsRemoteRows: under _lease_network_fs=allow
// on a network filesystem, a lease row written during another boot (a
// process of another host, as far as this one can tell) is never reclaimed
// on local evidence: a write in mode require gets ErrLeaseUnavailable, and
// only a forced Break frees the lane. On a local filesystem the same row is
// reclaimed at once (a holder from before a reboot is dead).
func TestNetworkFSOptInNeverReclaimsRemoteRows(t *testing.T) {
	for _, network := range []bool{true, false} {
		t.Run(map[bool]string{true: "network", false: "local"}[network], func(t *testing.T) {
			dir := testdir.New(t)
			fakeFS(t, dir, platform.FSInfo{Name: "nfs", Network: network}, nil)
			dsn := "file:" + filepath.Join(dir, "x") + "?_lease_network_fs=allow&_lease_mode=require&_lease_wait=300ms&_lease_linger=0"
			db, err := sql.Open("cleolease", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE t(a)`); err != nil {
				t.Fatal(err)
			}
			raw, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "x")+"?_busy_timeout=5000")
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			// Another host's holder: another boot id, a pid that means
			// nothing here, a heartbeat far in the future.
			future := time.Now().Add(time.Hour).UnixMilli()
			if _, err := raw.Exec(`UPDATE _writer_leases SET active = 0`); err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(`INSERT INTO _writer_leases(scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms, holder_start)
				VALUES ('main', 'default', 'cl-other-host', 4000000, 1000000, ?, ?, 3600000, 'another-boot/ns/1/mark')`, future, future); err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(`INSERT INTO t VALUES (1)`)
			if network {
				if !errors.Is(err, ErrLeaseUnavailable) {
					t.Fatalf("write while another host holds the lane = %v, want ErrLeaseUnavailable", err)
				}
				if _, err := writer.Break(context.Background(), db, "main", "default", true); err != nil {
					t.Fatalf("forced Break: %v", err)
				}
				if _, err := db.Exec(`INSERT INTO t VALUES (2)`); err != nil {
					t.Fatalf("write after Break: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("on a local filesystem the row of another boot is reclaimed: %v", err)
			}
		})
	}
}
