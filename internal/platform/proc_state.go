package platform

import (
	"os"
	"strconv"
)

// ProcState is what the OS answers when asked whether a process runs.
type ProcState int

const (
	// ProcUnknown: the OS would not say (the process may be hidden from
	// this one, access to it was denied, or the call failed otherwise).
	// It proves neither life nor death.
	ProcUnknown ProcState = iota
	// ProcAlive: a process with the pid runs.
	ProcAlive
	// ProcDead: no process with the pid runs (or it is a zombie).
	ProcDead
)

// String returns "unknown", "alive" or "dead".
func (s ProcState) String() string {
	switch s {
	case ProcAlive:
		return "alive"
	case ProcDead:
		return "dead"
	}
	return "unknown"
}

// UID returns this process's effective user id in decimal, or "-" where
// the platform has none (Windows). It is recorded in holder_start so that
// a peer can tell whether the OS would show it the holder (see
// killState).
func UID() string {
	if u := os.Geteuid(); u >= 0 {
		return strconv.Itoa(u)
	}
	return "-"
}
