package lease

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestTakeoverFloor: a grant that takes a lane over from a row written on
// another host (or during another boot), or any grant but a hand-off on a
// replicated file, carries at least the clock floor, so that an epoch
// handed out after a failover exceeds every epoch the former writer could
// have issued, including those the copy of the file never received; a
// released row of this boot still counts on by one.
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
		{"released row of this boot", false, here, 0, false},
		{"dead holder of this boot", false, here, 1, false},
		{"released row without holder_start", false, "", 0, false},
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
// on a replicated file.
func TestTakeoverFloorNotOnHandoff(t *testing.T) {
	path := newDB(t)
	e := openEngine(t, path, func(o *Options) { o.Replicated = true })
	l := e.lane("s", "l")
	if f := l.takeoverFloor(&row{epoch: 5, h: holder{ID: e.HolderID()}}); f != 0 {
		t.Fatalf("floor of a hand-off %d, want 0", f)
	}
	if f := l.takeoverFloor(&row{epoch: 5, h: holder{ID: "cl-other"}}); f == 0 {
		t.Fatal("no floor for a takeover on a replicated file")
	}
}
