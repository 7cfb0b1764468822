package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// With a derived sidecar directory the first claim records the nonce kept
// there; a nonce recorded by another process of this boot (another
// derived directory) makes the claim fail with ErrSidecarDir, naming
// _lease_sidecar_dir, before any holder is judged; one recorded during
// another boot is replaced. Without SidecarDirDerived nothing is recorded.
func TestSidecarProof(t *testing.T) {
	ctx := context.Background()
	dir := testdir.New(t)
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0; o.SidecarDir = dir; o.SidecarDirDerived = true })
	claim := func() error {
		h, err := e.Acquire(ctx, "s", "l", req)
		if err == nil {
			h.Release()
		}
		return err
	}
	if err := claim(); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	var nonce, boot string
	if err := raw.QueryRow(`SELECT nonce, boot FROM _writer_sidecar WHERE id = 1`).Scan(&nonce, &boot); err != nil {
		t.Fatalf("no nonce recorded: %v", err)
	}
	kept, err := os.ReadFile(e.proof.path)
	if err != nil || strings.TrimSpace(string(kept)) != nonce || boot != bootID() {
		t.Fatalf("recorded %q (boot %q), kept %q (%v); want the kept nonce and this boot", nonce, boot, kept, err)
	}

	if _, err := raw.Exec(`UPDATE _writer_sidecar SET nonce = 'another directory'`); err != nil {
		t.Fatal(err)
	}
	err = claim()
	var le *Error
	if !errors.Is(err, ErrSidecarDir) || !errors.As(err, &le) || !strings.Contains(err.Error(), "_lease_sidecar_dir") {
		t.Fatalf("claim with another process's nonce: %v; want ErrSidecarDir naming _lease_sidecar_dir", err)
	}
	var active int
	raw.QueryRow(`SELECT count(*) FROM _writer_leases WHERE active = 1`).Scan(&active)
	if active != 0 {
		t.Fatalf("%d active rows after a refused claim", active)
	}

	if _, err := raw.Exec(`UPDATE _writer_sidecar SET boot = 'another boot'`); err != nil {
		t.Fatal(err)
	}
	if err := claim(); err != nil {
		t.Fatalf("claim with another boot's nonce: %v; want the nonce replaced", err)
	}
	raw.QueryRow(`SELECT nonce, boot FROM _writer_sidecar WHERE id = 1`).Scan(&nonce, &boot)
	if nonce != strings.TrimSpace(string(kept)) || boot != bootID() {
		t.Fatalf("after another boot's nonce: recorded %q, %q; want ours", nonce, boot)
	}

	// A given (not derived) directory records nothing.
	path2 := newDB(t)
	e2 := openEngine(t, path2, func(o *Options) { o.Linger = 0; o.SidecarDir = testdir.New(t) })
	h, err := e2.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	var n int
	rawDB(t, path2).QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = '_writer_sidecar'`).Scan(&n)
	if n != 0 {
		t.Fatal("a given sidecar directory created _writer_sidecar")
	}
}

// Processes creating the nonce file at once agree on one nonce.
func TestSidecarProofNonceCreatedOnce(t *testing.T) {
	base := testdir.New(t) + "/app.db-0123"
	const n = 8
	got := make(chan string, n)
	for range n {
		go func() {
			p, err := newSidecarProof(base, 0o644)
			if err != nil {
				got <- "err " + err.Error()
				return
			}
			got <- p.nonce
		}()
	}
	first := <-got
	for range n - 1 {
		if g := <-got; g != first {
			t.Fatalf("nonces %q and %q", first, g)
		}
	}
	if strings.HasPrefix(first, "err") || first == "" {
		t.Fatal(first)
	}
}

// Where the liveness files' locks are not seen from another open file
// (platform.ErrLocksIgnored: LiteFS, another FUSE mount, a network share),
// Open refuses with ErrSidecarDir naming the remedy, _lease_sidecar_dir.
func TestOpenRefusesIgnoredLocks(t *testing.T) {
	orig := openLocks
	t.Cleanup(func() { openLocks = orig })
	openLocks = func(db string, mode fs.FileMode, slot int64) (platform.Locks, error) {
		return nil, fmt.Errorf("%w (%s)", platform.ErrLocksIgnored, platform.SidecarPath(db))
	}
	path := newDB(t)
	e, err := Open(context.Background(), Options{Path: path, DSN: "file:" + path})
	if e != nil {
		e.Close()
	}
	var le *Error
	if !errors.Is(err, ErrSidecarDir) || !errors.As(err, &le) || !strings.Contains(err.Error(), "_lease_sidecar_dir") || !strings.Contains(err.Error(), platform.SidecarPath(path)) {
		t.Fatalf("Open where locks are ignored: %v; want ErrSidecarDir naming the sidecar and _lease_sidecar_dir", err)
	}
}
