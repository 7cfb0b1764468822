package lease

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// injectLookup makes lookupProcess answer s (and start st) for every pid
// until the test ends. Call it before opening engines: their goroutines
// read lookupProcess.
func injectLookup(t *testing.T, s platform.ProcState, st string) {
	t.Helper()
	saved := lookupProcess
	lookupProcess = func(int64, string) (platform.ProcState, string) { return s, st }
	t.Cleanup(func() { lookupProcess = saved })
}

// What the OS answers, injected, becomes the verdict: a hidden or refused
// process, or a running pid whose start time cannot be compared, is
// unknown — never dead.
func TestProbeThreeWays(t *testing.T) {
	here := bootID() + "/" + pidNamespace() + "/"
	cases := []struct {
		name  string
		start string // holder_start
		os    platform.ProcState
		osSt  string
		want  platform.ProcState
	}{
		{"running, same start", here + "100/m/1001", platform.ProcAlive, "100", platform.ProcAlive},
		{"running, other start (reused)", here + "100/m/1001", platform.ProcAlive, "200", platform.ProcDead},
		{"running, start unreadable", here + "100/m/1001", platform.ProcAlive, "", platform.ProcUnknown},
		{"running, start unknowable here", here + "?/m/1001", platform.ProcAlive, "?", platform.ProcUnknown},
		{"exited", here + "100/m/1001", platform.ProcDead, "", platform.ProcDead},
		{"hidden or access denied", here + "100/m/1001", platform.ProcUnknown, "", platform.ProcUnknown},
		{"earlier version's row (no uid), hidden", here + "100/m", platform.ProcUnknown, "", platform.ProcUnknown},
		{"original implementation's row, exists", "", platform.ProcAlive, "", platform.ProcAlive},
		{"original implementation's row, hidden", "", platform.ProcUnknown, "", platform.ProcUnknown},
		{"original implementation's row, exited", "", platform.ProcDead, "", platform.ProcDead},
		{"another boot", "other-boot/x/100/m/1001", platform.ProcAlive, "100", platform.ProcDead},
		// A container sharing the volume: its pid means nothing here and
		// its lock was not testable (issue 28 item 3: was dead).
		{"another pid namespace, lock not testable", bootID() + "/pid:[1]/100/m/1001", platform.ProcAlive, "100", platform.ProcUnknown},
		{"another pid namespace, pid absent here", bootID() + "/pid:[1]/100/m/1001", platform.ProcDead, "", platform.ProcUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			injectLookup(t, c.os, c.osSt)
			v := probeHolder("me", nil, holder{ID: "them", PID: 4242, Start: c.start}, false)
			if v.state != c.want {
				t.Fatalf("verdict %v (%s), want %v", v.state, v.reason, c.want)
			}
		})
	}
}

// The holder's recorded uid reaches the OS lookup (the BSDs decide ESRCH
// by it), and rows without one pass "".
func TestProbePassesHolderUID(t *testing.T) {
	here := bootID() + "/" + pidNamespace() + "/"
	for start, want := range map[string]string{here + "1/m/1001": "1001", here + "1/m": "", here + "1": "", "": ""} {
		var got *string
		saved := lookupProcess
		lookupProcess = func(_ int64, uid string) (platform.ProcState, string) { got = &uid; return platform.ProcUnknown, "" }
		probeHolder("me", nil, holder{ID: "them", PID: 4242, Start: start}, false)
		lookupProcess = saved
		if got == nil || *got != want {
			t.Fatalf("holder_start %q: lookup got uid %v, want %q", start, got, want)
		}
	}
}

// The engine's decision per verdict: alive waits; dead reclaims at once;
// unknown waits until the heartbeat is older than the TTL, then reclaims.
func TestReclaimDecision(t *testing.T) {
	const ttl, now = 1000, 1_000_000
	fresh, stale := int64(now-ttl/2), int64(now-ttl-1)
	alive, dead, unknown := aliveBecause(""), deadBecause(""), unknownBecause("")
	cases := []struct {
		name      string
		v         verdict
		heartbeat int64
		rowTTL    int64
		steal     bool
		ok        bool
		why       string
	}{
		{"alive, fresh", alive, fresh, ttl, false, false, ""},
		{"alive, stale", alive, stale, ttl, false, false, ""},
		{"alive, stale, steal policy", alive, stale, ttl, true, true, "ttl"},
		{"dead, fresh", dead, fresh, ttl, false, true, "dead"},
		{"unknown, fresh", unknown, fresh, ttl, false, false, ""},
		{"unknown, fresh, steal policy", unknown, fresh, ttl, true, false, ""},
		{"unknown, exactly the TTL old", unknown, now - ttl, ttl, false, false, ""},
		{"unknown, stale", unknown, stale, ttl, false, true, "unknown"},
		{"unknown, stale, row without TTL (engine's)", unknown, stale, 0, false, true, "unknown"},
	}
	for _, c := range cases {
		ok, why := reclaimDecision(c.v, now, c.heartbeat, c.rowTTL, ttl, c.steal)
		if ok != c.ok || why != c.why {
			t.Errorf("%s: reclaim %v %q, want %v %q", c.name, ok, why, c.ok, c.why)
		}
	}
}

// End to end: a lane whose holder the OS will not tell about (injected)
// is not taken while its heartbeat is fresh, and is reclaimed once the
// heartbeat is older than its TTL; a holder the OS reports dead is
// reclaimed at once. (Before the three-way answer, the first case took
// the lane at once: the holder's pid does not exist here.)
func TestUnknownHolderWaitsForTTL(t *testing.T) {
	here := bootID() + "/" + pidNamespace() + "/100//1001"
	cases := []struct {
		name     string
		os       platform.ProcState
		age      time.Duration // of the heartbeat
		granted  bool
		counters func(Stats) int64
	}{
		{"unknown, fresh heartbeat", platform.ProcUnknown, 0, false, nil},
		{"unknown, heartbeat older than the TTL", platform.ProcUnknown, 2 * time.Hour, true, func(s Stats) int64 { return s.ReclaimUnknown }},
		{"dead, fresh heartbeat", platform.ProcDead, 0, true, func(s Stats) int64 { return s.ReclaimDead }},
		{"alive, heartbeat older than the TTL", platform.ProcAlive, 2 * time.Hour, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			injectLookup(t, c.os, "100")
			path := newDB(t)
			e := openEngine(t, path, nil)
			db := rawDB(t, path)
			hb := time.Now().Add(-c.age).UnixMilli()
			if _, err := db.Exec(`INSERT INTO _writer_leases(scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms, holder_start)
				VALUES ('s', 'l', 'hidden', 4000000, 7, ?, ?, 3600000, ?)`, hb, hb, here); err != nil {
				t.Fatal(err)
			}
			if c.os == platform.ProcAlive {
				// A live holder's engine listens on the file: its doorbell
				// takes the registration (one that refuses it holds no
				// grant here: TestRestoredRowOfANonListeningProcess).
				if b, err := platform.ListenBell(e.base, "hidden", platform.FileID{Dev: e.dev, Ino: e.ino}); err == nil {
					t.Cleanup(func() { b.Close() })
				}
			}
			h, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Wait: 200 * time.Millisecond, Require: true})
			if !c.granted {
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Acquire: %v, want ErrUnavailable (the holder may be alive)", err)
				}
				var id string
				db.QueryRow(`SELECT holder_id FROM _writer_leases WHERE active = 1`).Scan(&id)
				if id != "hidden" {
					t.Fatalf("the lane's holder is %q, want the untouched %q", id, "hidden")
				}
				st, err := e.Status(context.Background())
				if err != nil || len(st) != 1 || st[0].Holder == nil || st[0].Holder.Liveness != c.os.String() || st[0].Holder.Alive != (c.os == platform.ProcAlive) {
					t.Fatalf("Status: %+v, %v; want the holder's liveness %q", st, err, c.os)
				}
				return
			}
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			defer h.Release()
			if h.Epoch() <= 7 {
				t.Fatalf("epoch %d, want above 7", h.Epoch())
			}
			if n := c.counters(e.Stats()); n != 1 {
				t.Fatalf("reclaim counter %d, want 1: %+v", n, e.Stats())
			}
		})
	}
}

// This process's holder_start ends with its uid (see holderStart).
func TestHolderStartRecordsUID(t *testing.T) {
	e := openEngine(t, newDB(t), nil)
	parts := strings.Split(e.start, "/")
	if len(parts) != 5 || parts[4] != platform.UID() || parts[0] != bootID() {
		t.Fatalf("holder_start %q, want boot/pidns/start/mark/%s", e.start, platform.UID())
	}
}

// Through the pid-namespace seam: this very process's row, judged by a
// process of another pid namespace that cannot test its liveness lock
// (another mark), is unknown whatever that process's OS says of the pid
// (issue 28 item 3).
func TestProbeFromAnotherPIDNamespace(t *testing.T) {
	row := holder{ID: "them", PID: int64(os.Getpid()), Start: procIdentity() + "/not-our-mark/" + platform.UID(), Slot: slotFor("them")}
	saved := pidNamespace
	pidNamespace = func() string { return "pid:[4026531999]" }
	t.Cleanup(func() { pidNamespace = saved })
	for _, os := range []platform.ProcState{platform.ProcAlive, platform.ProcDead, platform.ProcUnknown} {
		injectLookup(t, os, "1")
		if v := probeHolder("me", nil, row, false); v.state != platform.ProcUnknown {
			t.Fatalf("OS answer %v: verdict %v (%s), want unknown", os, v.state, v.reason)
		}
	}
}

// A process that moved to a new sidecar keeps its identity in
// holder_start; only the mark changes (withMark).
func TestWithMark(t *testing.T) {
	for in, want := range map[string]string{
		"boot/pid:[1]/100/old/1001": "boot/pid:[1]/100/new/1001",
		"boot/pid:[1]/100/old":      "boot/pid:[1]/100/new",
		"boot/pid:[1]/100":          "boot/pid:[1]/100/new",
	} {
		if got := withMark(in, "new"); got != want {
			t.Errorf("withMark(%q): %q, want %q", in, got, want)
		}
	}
}

// A live holder of the original implementation (a row with neither
// holder_start nor holder_slot: it has no doorbell, so every registration
// is refused) keeps its lane: the refusal proves only that a cleolease
// engine does not listen (reclaimable), and the original's processes
// never do.
func TestOriginalImplementationsLiveHolderKeepsItsLane(t *testing.T) {
	injectLookup(t, platform.ProcAlive, "")
	path := newDB(t)
	e := openEngine(t, path, nil)
	db := rawDB(t, path)
	now := time.Now().UnixMilli()
	if _, err := db.Exec(`INSERT INTO _writer_leases(scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms)
		VALUES ('s', 'l', 'original', 4000000, 7, ?, ?, 3600000)`, now, now); err != nil {
		t.Fatal(err)
	}
	_, err := e.Acquire(context.Background(), "s", "l", AcquireOptions{Wait: 300 * time.Millisecond, Require: true})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire: %v, want ErrUnavailable (the original's holder lives)", err)
	}
	var id string
	if err := db.QueryRow(`SELECT holder_id FROM _writer_leases WHERE active = 1`).Scan(&id); err != nil || id != "original" {
		t.Fatalf("the lane's holder is %q (%v), want the original's", id, err)
	}
}
