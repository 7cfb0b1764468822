package lease

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestTakeoverFloor: every grant but a hand-off — a takeover of a row
// written on another host (or during another boot), a reclaim of a dead
// holder of this boot, the reuse of a released row — carries at least the
// clock floor, replicated file or not, so that an epoch handed out after a
// failover, a restore or a copy exceeds every epoch the former writer
// could have issued, including those the copy of the file never received.
func TestTakeoverFloor(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	floor := t0.UnixMicro()
	here := bootPrefix() + pidNamespace() + "/1//0"
	self := int64(os.Getpid()) // with start time 1: a reused pid, so dead
	cases := []struct {
		name       string
		replicated bool
		start      string
		active     int
		floored    bool
	}{
		{"active row of another boot", false, "another-host-boot/pid:[1]/1//0", 1, true},
		{"released row of another boot", false, "another-host-boot/pid:[1]/1//0", 0, true},
		{"released row of this boot", false, here, 0, true},
		{"dead holder of this boot", false, here, 1, true},
		{"released row without holder_start", false, "", 0, true},
		{"replicated: released row of this boot", true, here, 0, true},
		{"replicated: dead holder of this boot", true, here, 1, true},
		{"replicated: released row without holder_start", true, "", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := newDB(t)
			e := openEngine(t, path, func(o *Options) {
				o.Linger = 0
				o.Clock = newRelClock(t0)
				o.Replicated = tc.replicated
			})
			var start any
			if tc.start != "" {
				start = tc.start
			}
			db := rawDB(t, path)
			if _, err := db.Exec(`INSERT INTO _writer_leases (scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms, reentrancy_depth, active, holder_start)
				VALUES ('s', 'l', 'cl-former', ?, 5, 0, 0, 3600000, 1, ?, ?)`, self, tc.active, start); err != nil {
				t.Fatal(err)
			}
			h, err := e.Acquire(context.Background(), "s", "l", req)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release()
			want := int64(6)
			if tc.floored {
				want = floor
			}
			if h.Epoch() != want {
				t.Fatalf("epoch %d, want %d (floored: %v)", h.Epoch(), want, tc.floored)
			}
		})
	}
}

// A hand-off rewrites this process's own row: it counts on from it, even
// on a replicated file; any other grant takes the floor.
func TestTakeoverFloorNotOnHandoff(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Replicated = true })
	l := e.lane("s", "l")
	if f := l.takeoverFloor(true); f != 0 {
		t.Fatalf("floor of a hand-off %d, want 0", f)
	}
	if f := l.takeoverFloor(false); f == 0 {
		t.Fatal("no floor for a grant that is not a hand-off")
	}
}
