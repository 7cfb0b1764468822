//go:build unix

package platform

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"golang.org/x/sys/unix"
)

// exitSource is the kernel's report of one process's exit (a kqueue on
// macOS and the BSDs), behind an interface so that the logic of
// runExitWatch runs in tests with injected answers.
type exitSource interface {
	// Wait blocks until the process exits (true), Wake is called or the
	// kernel returns early (false), or the kernel fails (an error).
	Wait() (exited bool, err error)
	// Wake makes a blocked or later Wait return false.
	Wake()
	// Close releases the source; no Wait or Wake follows it.
	Close()
}

// runExitWatch waits on src on a goroutine of its own and calls fn once
// the process exits. stop ends the watch: it wakes the waiting goroutine,
// which closes src. A failing wait is never silent: it is logged to warn
// and fn is called, so that a waiter re-checks its holder at once rather
// than waiting for a report that will not come. EINTR and early returns
// are waited through.
func runExitWatch(src exitSource, fn func(), warn func(error)) (stop func()) {
	var mu sync.Mutex
	stopped, closed := false, false
	isStopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopped
	}
	go func() {
		defer func() {
			mu.Lock()
			closed = true
			src.Close()
			mu.Unlock()
		}()
		for {
			exited, err := src.Wait()
			switch {
			case isStopped():
				return
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				warn(err)
				fn()
				return
			case exited:
				fn()
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && !closed {
			src.Wake()
		}
		stopped = true
	}
}

// warnExitWatch logs a failed exit watch to slog.Default.
func warnExitWatch(pid int64) func(error) {
	return func(err error) {
		slog.Default().Warn("cleolease: exit watch failed; waiters fall back to polling",
			"pid", pid, "err", fmt.Sprint(err))
	}
}
