package cleolease_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestSidecarDir: with _lease_sidecar_dir the liveness files live in that
// directory, nothing but the database and SQLite's own files is created
// beside it (what a LiteFS mount accepts), and the lease still orders
// processes: two of them, 100 read-modify-write increments each, count
// exactly 200.
func TestSidecarDir(t *testing.T) {
	path, raw := newFile(t)
	side := testdir.New(t)
	dsn := "file:" + path + "?_lease_sidecar_dir=" + side
	var kids []*proc
	for range 2 {
		k := spawn(t, "intercept-rmw", dsn, "CLEOLEASE_N=100", "CLEOLEASE_G=1")
		k.next(t, "READY")
		kids = append(kids, k)
	}
	// The liveness files exist while a process has the database open (the
	// last to close removes them), so look while both children hold it.
	if sideEntries, err := os.ReadDir(side); err != nil || len(sideEntries) == 0 {
		t.Errorf("nothing in the sidecar directory %s while two processes have the database open (%v)", side, err)
	}
	for _, k := range kids {
		k.send("go")
	}
	for _, k := range kids {
		if got := k.next(t, "RESULT"); !strings.HasPrefix(got, "100 0 ") {
			t.Fatalf("child %d: RESULT %s, want 100 commits and 0 failures", k.pid, got)
		}
	}
	var n int
	if err := raw.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil || n != 200 {
		t.Fatalf("counter = %d, %v; want 200", n, err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(path)
	for _, e := range entries {
		switch strings.TrimPrefix(e.Name(), base) {
		case "", "-wal", "-shm", "-journal":
		default:
			t.Errorf("%s created beside the database; with _lease_sidecar_dir only SQLite's files belong there", e.Name())
		}
	}
}
