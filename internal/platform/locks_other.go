//go:build !linux && !windows && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package platform

import "io/fs"

// TicketOffset is where an arrival counter would live.
const TicketOffset = 0

// OpenLocks reports no liveness locks on this platform: liveness rests on
// pid and start time alone (and the TTL policy).
func OpenLocks(dbPath string, mode fs.FileMode, slot int64) (Locks, error) { return nil, nil }

// OpenLocksReadOnly reports no liveness locks on this platform.
func OpenLocksReadOnly(dbPath string) (Locks, error) { return nil, nil }

// Portable reports whether this build uses the portable tier's evidence;
// this platform has none.
const Portable = false

// KeepsLocks reports whether this build keeps liveness locks; this
// platform has none.
const KeepsLocks = false
