//go:build netbsd

package lease

// clockMonotonic is CLOCK_MONOTONIC's id on NetBSD (3, sys/sys/time.h),
// which golang.org/x/sys/unix does not define there.
const clockMonotonic = 3
