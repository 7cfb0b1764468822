package core

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// On a mount the OS reports as LiteFS (injected here), a DSN with no
// cleolease parameter opens and writes without a warning, creates nothing
// beside the database but SQLite's files, and keeps the liveness files,
// with the nonce that proves the directory shared, in the derived local
// directory; a given _lease_sidecar_dir takes precedence.
func TestLiteFSSidecarDirDerived(t *testing.T) {
	dir := testdir.New(t)
	fakeFS(t, dir, platform.FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}, nil)
	derived := testdir.New(t)
	orig := derivedSidecarDir
	derivedSidecarDir = func() (string, error) { return derived, nil }
	t.Cleanup(func() { derivedSidecarDir = orig })

	db, logs := openWithLog(t, "file:"+filepath.Join(dir, "app.db")+"?_journal_mode=WAL")
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if s := logs.String(); strings.Contains(s, "level=WARN") {
		t.Errorf("LiteFS logged a warning: %q", s)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		switch e.Name() {
		case "app.db", "app.db-wal", "app.db-shm", "app.db-journal":
		default:
			t.Errorf("%s beside the database on LiteFS", e.Name())
		}
	}
	for _, pat := range []string{"app.db-*-cleolease", "app.db-*-cleolease.nonce"} {
		if m, _ := filepath.Glob(filepath.Join(derived, pat)); len(m) != 1 {
			t.Errorf("derived directory: %v for %s, want one file", m, pat)
		}
	}

	// A given directory is used instead, with its own nonce (every
	// process proves where it keeps its liveness files: lease/sidecarproof.go).
	dir2 := testdir.New(t)
	fakeFS(t, dir2, platform.FSInfo{Name: "fuse.litefs", FUSE: true, LiteFS: true}, nil)
	given := testdir.New(t)
	db2, _ := openWithLog(t, "file:"+filepath.Join(dir2, "app.db")+"?_journal_mode=WAL&_lease_sidecar_dir="+given)
	if _, err := db2.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(given, "app.db-*-cleolease")); len(m) != 1 {
		t.Errorf("given directory: %v, want the sidecar", m)
	}
	if m, _ := filepath.Glob(filepath.Join(given, "app.db-*-cleolease.nonce")); len(m) != 1 {
		t.Errorf("given directory: %v, want its nonce", m)
	}
}

// The real derivation: "cleolease" in the temporary directory, created with the sticky
// bit and world-writable (as /tmp), the same on every call.
func TestDerivedSidecarDir(t *testing.T) {
	tmp := testdir.New(t)
	t.Setenv("TMPDIR", tmp) // os.TempDir: $TMPDIR on Unix, %TMP% or %TEMP% on Windows
	t.Setenv("TMP", tmp)
	t.Setenv("TEMP", tmp)
	a, err := derivedSidecarDir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := derivedSidecarDir()
	if err != nil || a != b || a != filepath.Join(tmp, "cleolease") {
		t.Fatalf("derived %q then %q (%v); want %s twice", a, b, err, filepath.Join(tmp, "cleolease"))
	}
	fi, err := os.Stat(a)
	if err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v; want a directory", a, err)
	}
	if runtime.GOOS != "windows" && (fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0) {
		t.Fatalf("%s: %v; want a sticky world-writable directory", a, fi.Mode())
	}
}
