package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/google/uuid"
)

// With a derived sidecar directory the first claim records the nonce kept
// there; a fresh nonce recorded by another process of this boot (another
// directory) makes the claim fail with ErrSidecarDir, naming
// _lease_sidecar_dir, before any holder is judged (at once: this
// process's nonce file is older than moveWait, so every process of its
// directory has read it); one recorded during another boot, or not
// renewed for a TTL, is replaced. A given directory and the sidecar beside
// the database record their tokens too.
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

	age(t, e.proof.path, 2*e.moveWait())
	// Another directory's record: another nonce, and its liveness files
	// at another path (a record of this process's path, by a process
	// that resolves paths as this one does, is this directory's: its
	// nonce was removed, TestSidecarProofNonceRemovedUnderANonListeningRecorder).
	if _, err := raw.Exec(`UPDATE _writer_sidecar SET nonce = 'another directory', sidecar = '/another/directory/lease.db-cleolease'`); err != nil {
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

	stale := time.Now().Add(-2 * e.opts.TTL).UnixMilli()
	if _, err := raw.Exec(`UPDATE _writer_sidecar SET nonce = 'a directory gone quiet', written_at = ?`, stale); err != nil {
		t.Fatal(err)
	}
	if err := claim(); err != nil {
		t.Fatalf("claim with a nonce not renewed for a TTL: %v; want it replaced", err)
	}
	raw.QueryRow(`SELECT nonce FROM _writer_sidecar WHERE id = 1`).Scan(&nonce)
	if nonce != strings.TrimSpace(string(kept)) {
		t.Fatalf("after a stale nonce: recorded %q; want ours", nonce)
	}

	// A given directory records its nonce, and the sidecar beside the
	// database its directory's identity.
	for _, given := range []string{testdir.New(t), ""} {
		path2 := newDB(t)
		e2 := openEngine(t, path2, func(o *Options) { o.Linger = 0; o.SidecarDir = given })
		h, err := e2.Acquire(ctx, "s", "l", req)
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
		var got string
		rawDB(t, path2).QueryRow(`SELECT nonce FROM _writer_sidecar WHERE id = 1`).Scan(&got)
		if got == "" || got != e2.proof.token() || (given == "") != strings.HasPrefix(got, besidePrefix) {
			t.Fatalf("sidecar directory %q: recorded %q; want this process's token %q", given, got, e2.proof.token())
		}
	}
}

// age sets the modification time of the file at p to d ago.
func age(t *testing.T, p string, d time.Duration) {
	t.Helper()
	then := time.Now().Add(-d)
	if err := os.Chtimes(p, then, then); err != nil {
		t.Fatal(err)
	}
}

// openPeer opens another engine on the file at path in this process, as
// if it were another process (its own holder id, liveness files and
// doorbell), with TTL 2 s and no Linger unless mod says otherwise.
func openPeer(t *testing.T, path string, mod func(*Options)) *Engine {
	t.Helper()
	seams := realSeams()
	seams.shared, seams.holderID = false, "cl-"+uuid.NewString()
	o := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000", TTL: 2 * time.Second}
	if mod != nil {
		mod(&o)
	}
	e, err := openWith(context.Background(), o, seams)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Two processes of one file that keep their liveness files in different
// places are refused with ErrSidecarDir, whichever places: a given
// directory and a derived one, the sidecar beside the database and a
// directory (both ways); the later one is refused while the earlier one
// holds a lane, and that holder keeps its lease. A given and a derived
// directory that are the same directory agree.
func TestSidecarProofPlaces(t *testing.T) {
	ctx := context.Background()
	d1, d2 := testdir.New(t), testdir.New(t)
	for _, c := range []struct {
		name       string
		first, sec func(*Options)
		wait       bool // the second's nonce is new: it waits moveWait for movers first
		agree      bool
	}{
		{"given, then derived", given(d1), derived(d2), true, false},
		{"derived, then given (old nonce file)", derived(d1), given(d2), false, false},
		{"beside, then given", nil, given(d1), false, false},
		{"given, then beside", given(d1), nil, false, false},
		{"derived, then given, same directory", derived(d1), given(d1), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := newDB(t)
			a := openPeer(t, path, c.first)
			ha, err := a.Acquire(ctx, "s", "l", req)
			if err != nil {
				t.Fatal(err)
			}
			b := openPeer(t, path, c.sec)
			if b.proof.path != "" && !c.wait {
				age(t, b.proof.path, 2*b.moveWait())
			}
			// (A waiter that registered with the holder runs its first claim
			// transaction, and so the proof, after selfEnqueueAfter.)
			wait := time.Minute
			if c.agree {
				wait = 3 * selfEnqueueAfter
			}
			hb, err := b.Acquire(ctx, "s", "l", AcquireOptions{Wait: wait, Require: true})
			switch {
			case c.agree && !errors.Is(err, ErrUnavailable):
				t.Fatalf("second process, same place: %v; want it to wait for the lane (ErrUnavailable at its bound)", err)
			case !c.agree && !errors.Is(err, ErrSidecarDir):
				t.Fatalf("second process, another place: %v; want ErrSidecarDir", err)
			}
			if hb != nil {
				hb.Release()
			}
			if err := ha.Check(ctx); err != nil {
				t.Fatalf("the first process's lease after the second's claim: %v", err)
			}
			ha.Release()
		})
	}
}

func given(dir string) func(*Options) {
	return func(o *Options) { o.SidecarDir = dir }
}

func derived(dir string) func(*Options) {
	return func(o *Options) { o.SidecarDir, o.SidecarDirDerived = dir, true }
}

// Issue 28 item 2 with a sidecar directory (given, or derived for a
// LiteFS mount): a cleaner removes the sidecar and the nonce beside it
// while a process holds the lane; a process that opens afterwards writes
// a new nonce and finds the old one recorded, fresh. The holder, which
// moves to the new sidecar, adopts the new nonce and records it, so the
// late process is served, not refused (its wait for the movers is bounded
// by moveWait: TTL/2, 10 s here; the holder looks at once where the file
// watch reports the removal, within TTL/3 = 1 s otherwise). On c2e842a
// the late process was refused with ErrSidecarDir.
func TestSidecarProofNonceRemovedServed(t *testing.T) {
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness locks")
	}
	for _, kind := range []string{"derived", "given"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			dir := testdir.New(t)
			path := newDB(t)
			place := func(ttl time.Duration) func(*Options) {
				return func(o *Options) {
					o.SidecarDir, o.SidecarDirDerived, o.TTL = dir, kind == "derived", ttl
				}
			}
			a := openPeer(t, path, place(3*time.Second))
			ha, err := a.Acquire(ctx, "s", "l", req)
			if err != nil {
				t.Fatal(err)
			}
			old := a.proof.token()
			if err := os.Remove(a.proof.path); err != nil {
				t.Fatal(err)
			}
			removeSidecar(t, a.base)
			b := openPeer(t, path, place(20*time.Second))
			if b.proof.token() == old {
				t.Fatal("the late process read the removed nonce")
			}
			got := make(chan error, 1)
			go func() {
				hb, err := b.Acquire(ctx, "s", "l", req)
				if err == nil {
					hb.Release()
				}
				got <- err
			}()
			eventually(t, "the holder to adopt the late process's nonce (or the late process to fail)", func() bool {
				return len(got) > 0 || a.proof.token() == b.proof.token()
			})
			select {
			case err := <-got:
				t.Fatalf("the process that opened after the nonce was removed, while the holder holds the lane: %v; want it to wait for the lane", err)
			default:
			}
			ha.Release()
			if err := <-got; err != nil {
				t.Fatalf("the process that opened after the nonce was removed: %v; want the lane", err)
			}
			var nonce string
			rawDB(t, path).QueryRow(`SELECT nonce FROM _writer_sidecar WHERE id = 1`).Scan(&nonce)
			if nonce != b.proof.token() {
				t.Fatalf("recorded %q; want the new nonce %q (the removed one was %q)", nonce, b.proof.token(), old)
			}
		})
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
	e, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path})
	if e != nil {
		e.Close()
	}
	var le *Error
	if !errors.Is(err, ErrSidecarDir) || !errors.As(err, &le) || !strings.Contains(err.Error(), "_lease_sidecar_dir") || !strings.Contains(err.Error(), platform.SidecarPath(path)) {
		t.Fatalf("Open where locks are ignored: %v; want ErrSidecarDir naming the sidecar and _lease_sidecar_dir", err)
	}
}

// A process at work keeps its token fresh even when it runs no claim (a
// lane handed from process to process inside the data commits): its
// heartbeat tick renews written_at once it is older than TTL/3.
func TestSidecarProofRenewedWhileWorking(t *testing.T) {
	ctx := context.Background()
	path := newDB(t)
	e := openPeer(t, path, func(o *Options) { o.TTL = 900 * time.Millisecond; o.Linger = time.Hour })
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	raw := rawDB(t, path)
	old := time.Now().Add(-time.Hour).UnixMilli()
	if _, err := raw.Exec(`UPDATE _writer_sidecar SET written_at = ?`, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the holder's heartbeat to renew its token", func() bool {
		var at int64
		raw.QueryRow(`SELECT written_at FROM _writer_sidecar`).Scan(&at)
		return at > old
	})
}

// A cleaner removes the sidecar directory's nonce while the process that
// recorded it runs but does not listen: it closed its engine and opened
// the file again (Options.TablesReady), so no file watch or heartbeat
// re-reads the nonce file for it. A process that opens afterwards writes
// a new nonce and finds the old one recorded, fresh, by a live process
// that keeps its liveness files at the same path in the same mount
// namespace: the old nonce was removed, not another directory's. It is
// served (issue 39; it was refused with ErrSidecarDir after moveWait),
// and the recorder adopts the new nonce at its next claim instead of
// recording its old one back.
func TestSidecarProofNonceRemovedUnderANonListeningRecorder(t *testing.T) {
	if !platform.SamePathsAs(int64(os.Getpid())) {
		t.Skip("this platform cannot tell a process's paths")
	}
	ctx := context.Background()
	side := testdir.New(t)
	path := newDB(t)
	recorder := "cl-" + uuid.NewString()
	place := func(o *Options) { o.SidecarDir, o.TTL = side, 4*time.Second }
	seams := realSeams()
	seams.shared, seams.holderID = false, recorder
	o := Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL&_busy_timeout=30000"}
	place(&o)
	first, err := openWith(ctx, o, seams)
	if err != nil {
		t.Fatal(err)
	}
	h, err := first.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	old := first.proof.token()
	first.Close()
	o.TablesReady = true
	again, err := openWith(ctx, o, seams)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.listening.Load() {
		t.Fatal("the reopened engine listens: the test would prove nothing")
	}
	if err := os.Remove(again.proof.path); err != nil {
		t.Fatal(err)
	}
	late := openPeer(t, path, place)
	if late.proof.token() == old {
		t.Fatal("the late process read the removed nonce")
	}
	hl, err := late.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Second, Require: true})
	if err != nil {
		t.Fatalf("the process that opened after the nonce was removed: %v; want the lane", err)
	}
	hl.Release()
	recorded := func() string {
		var nonce string
		if err := rawDB(t, path).QueryRow(`SELECT nonce FROM _writer_sidecar WHERE id = 1`).Scan(&nonce); err != nil {
			t.Fatal(err)
		}
		return nonce
	}
	if got := recorded(); got != late.proof.token() {
		t.Fatalf("recorded %q; want the new nonce %q", got, late.proof.token())
	}
	ha, err := again.Acquire(ctx, "s", "l", AcquireOptions{Wait: time.Second, Require: true})
	if err != nil {
		t.Fatalf("the recorder's next claim: %v", err)
	}
	ha.Release()
	if again.proof.token() != late.proof.token() || recorded() != late.proof.token() {
		t.Fatalf("the recorder's nonce %q, recorded %q; want both the new nonce %q", again.proof.token(), recorded(), late.proof.token())
	}
}
