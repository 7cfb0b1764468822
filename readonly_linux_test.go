//go:build linux

package cleolease_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestReadOnlyMount: a database on a read-only mount (as root, a read-only
// bind mount; otherwise a directory and file its user cannot write) reads
// through cleolease as through go-sqlite3, and writes fail alike, with the
// same error type, code and text.
func TestReadOnlyMount(t *testing.T) {
	var paths []string
	for range 2 { // go-sqlite3's twin, then cleolease's
		dir := filepath.Join(testdir.New(t), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "a.db")
		db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'one'), (2, 'two')`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if os.Geteuid() != 0 {
			if err := os.Chmod(path, 0o444); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(path, 0o644) })
		}
		t.Cleanup(relReadOnlyDir(t, dir))
		paths = append(paths, path)
	}
	raw, err := roOpen("raw", "file:"+paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cl, err := roOpen("cl", "file:"+paths[1])
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	raw.SetMaxOpenConns(1)
	cl.SetMaxOpenConns(1)
	sr, sc := &session{db: raw}, &session{db: cl}
	for i, o := range roOps {
		if want, got := sr.runOp(o), sc.runOp(o); want != got {
			t.Errorf("call %d %v differs:\n go-sqlite3: %s\n cleolease:  %s", i, o, want, got)
		}
	}
	sr.end()
	sc.end()
	want, got := roTyped(raw), roTyped(cl)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("errors differ:\n go-sqlite3: %q\n cleolease:  %q", want, got)
	}
	if len(want) == 0 || want[0] != "exec sqlite3.Error true code=8 ext=8: attempt to write a readonly database" {
		t.Errorf("go-sqlite3's write: %q, want SQLITE_READONLY", want)
	}
	for _, p := range paths {
		if l := roListing(t, filepath.Dir(p)); len(l) != 1 {
			t.Errorf("%s holds %q", filepath.Dir(p), l)
		}
	}
}
