package lease

import (
	"sync"
	"testing"
)

// TestCloseRacingTheWatchersHandOff: Close hands the lane off while the
// linger watcher is already handing it off. Only one hand-off may run:
// before grant.handing, both ran, and the one that lost the race found
// the row handed on and logged "lease lost" (and counted it) for a lane
// this very process had just given away — at every Close of a busy lane.
func TestCloseRacingTheWatchersHandOff(t *testing.T) {
	needDoorbell(t)
	e, path, h := holdLaneSliced(t) // within the slice: the watcher hands off
	w := startChild(t, "wait", path, "CLEOLEASE_NAME=next")
	waitRegistered(t, e, 1)
	watcherIn, closeIn, proceed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	handoffs := 0
	e.setHook(func(op string) error {
		mu.Lock()
		switch op {
		case "handoff":
			handoffs++
			n := handoffs
			mu.Unlock()
			if n == 1 {
				close(watcherIn)
				<-proceed
			} else {
				close(closeIn) // Close's own hand-off ran (before the fix)
			}
			return nil
		case "handoff/skipped":
			mu.Unlock()
			close(closeIn) // Close found the watcher's hand-off running
			return nil
		}
		mu.Unlock()
		return nil
	})
	h.Release()
	<-watcherIn
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	<-closeIn
	close(proceed)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	w.expect("granted")
	if st := e.Stats(); st.Lost != 0 || st.Handoffs != 1 {
		t.Fatalf("stats %+v: want one hand-off and no grant lost", st)
	}
}
