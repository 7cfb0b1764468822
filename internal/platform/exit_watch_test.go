//go:build unix

package platform

import (
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeExit is an exitSource whose kernel answers the test injects.
type fakeExit struct {
	t       *testing.T
	answers chan fakeAnswer
	mu      sync.Mutex
	wakes   int
	closed  chan struct{}
	isClose bool
}

type fakeAnswer struct {
	exited bool
	err    error
}

func newFakeExit(t *testing.T) *fakeExit {
	return &fakeExit{t: t, answers: make(chan fakeAnswer, 8), closed: make(chan struct{})}
}

func (f *fakeExit) Wait() (bool, error) {
	a := <-f.answers
	return a.exited, a.err
}

func (f *fakeExit) Wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isClose {
		f.t.Error("Wake after Close (the descriptor may belong to another file by now)")
	}
	f.wakes++
	f.answers <- fakeAnswer{}
}

func (f *fakeExit) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isClose {
		f.t.Error("Close twice")
	}
	f.isClose = true
	close(f.closed)
}

// runExitWatch reports an exit once, waits through EINTR and early
// returns, never exits silently on a kernel error (the defect of the
// kqueue handed to Go's poller: every read failed and the goroutine
// returned without a word), and ends on stop without calling fn.
func TestRunExitWatch(t *testing.T) {
	eintr := fakeAnswer{err: unix.EINTR}
	early := fakeAnswer{}
	exit := fakeAnswer{exited: true}
	failed := fakeAnswer{err: errors.New("waiting for unsupported file type")}
	cases := []struct {
		name    string
		answers []fakeAnswer
		fn      bool // fn called
		warned  bool // warn called
	}{
		{"exit", []fakeAnswer{exit}, true, false},
		{"EINTR then exit", []fakeAnswer{eintr, eintr, exit}, true, false},
		{"early return then exit", []fakeAnswer{early, exit}, true, false},
		{"kernel error", []fakeAnswer{failed}, true, true},
		{"EINTR then kernel error", []fakeAnswer{eintr, failed}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newFakeExit(t)
			for _, a := range c.answers {
				src.answers <- a
			}
			called := make(chan struct{}, 2)
			var warned []error
			var wmu sync.Mutex
			stop := runExitWatch(src, func() { called <- struct{}{} }, func(err error) {
				wmu.Lock()
				warned = append(warned, err)
				wmu.Unlock()
			})
			<-src.closed
			stop()
			if got := len(called); (got == 1) != c.fn || got > 1 {
				t.Errorf("fn called %d times, want called=%v", got, c.fn)
			}
			wmu.Lock()
			defer wmu.Unlock()
			if (len(warned) == 1) != c.warned {
				t.Errorf("warnings %v, want warned=%v", warned, c.warned)
			}
			if c.warned && warned[0] != failed.err {
				t.Errorf("warned %v, want %v", warned[0], failed.err)
			}
		})
	}
	t.Run("stop", func(t *testing.T) {
		src := newFakeExit(t)
		src.answers <- early
		stop := runExitWatch(src, func() { t.Error("fn called after stop without an exit") }, func(err error) {
			t.Errorf("warned %v", err)
		})
		stop()
		<-src.closed
		stop() // a second stop neither wakes nor blocks
		src.mu.Lock()
		defer src.mu.Unlock()
		if src.wakes != 1 {
			t.Errorf("%d wakes, want 1", src.wakes)
		}
	})
}
