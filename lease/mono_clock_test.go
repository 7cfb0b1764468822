//go:build linux || darwin || freebsd || openbsd || dragonfly

package lease

import "golang.org/x/sys/unix"

// clockMonotonic is CLOCK_MONOTONIC's id.
const clockMonotonic = unix.CLOCK_MONOTONIC
