package testdir

import (
	"os"
	"path/filepath"
	"testing"
)

// The fallback removes a tree, files before their directories, with
// os.Remove alone (what Wine can do when os.RemoveAll cannot).
func TestRemoveEach(t *testing.T) {
	dir, err := os.MkdirTemp("", "testdir-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, p := range []string{"a/b/c.db", "a/b/c.db-wal", "a/d", "e.db"} {
		p = filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeEach(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after removeEach: %v", dir, err)
	}
}

// New's directory exists, is empty, and is gone after the test.
func TestNew(t *testing.T) {
	var dir string
	t.Run("sub", func(t *testing.T) {
		dir = New(t)
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("new directory: %v entries, %v", ents, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after the test: %v", dir, err)
	}
}
