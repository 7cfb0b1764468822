//go:build unix

package platform

import (
	"encoding/binary"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// kinfoLayout says where a BSD kernel's per-process sysctl record keeps the
// fields StartTime reads (golang.org/x/sys/unix decodes that record for
// darwin only). Offsets are in bytes from the record's start, in the
// machine's byte order; the layouts, with the public headers they come
// from, are in proc_start_*.go.
type kinfoLayout struct {
	size      int    // bytes of one record (the elem_size asked for, where asked)
	sizeField bool   // the record starts with its own size as an int32 (FreeBSD's ki_structsize)
	pidAt     int    // int32 pid
	statAt    int    // one-byte run state
	zombies   []byte // run states of an exited process not yet reaped
	validAt   int    // int64 that is non-zero when the start time is filled in; -1: always
	secAt     int    // start time, seconds
	secSize   int    // 4 or 8 bytes
	usecAt    int    // start time, microseconds
	usecSize  int    // 4 or 8 bytes
}

// startTime decodes the start time from rec, the sysctl's answer for pid:
// "sec.usec"; "" when the record says the process is gone (no record, or
// a zombie); "?" when the record cannot be read (short, another size,
// another pid, or no start time filled in).
func (l kinfoLayout) startTime(rec []byte, pid int64, order binary.ByteOrder) string {
	if len(rec) == 0 {
		return ""
	}
	if len(rec) < l.size {
		return "?"
	}
	if l.sizeField && int(int32(order.Uint32(rec))) != l.size {
		return "?"
	}
	if int64(int32(order.Uint32(rec[l.pidAt:]))) != pid {
		return "?"
	}
	for _, z := range l.zombies {
		if rec[l.statAt] == z {
			return ""
		}
	}
	if l.validAt >= 0 && order.Uint64(rec[l.validAt:]) == 0 {
		return "?"
	}
	sec := readInt(rec[l.secAt:], l.secSize, order)
	usec := readInt(rec[l.usecAt:], l.usecSize, order)
	if sec <= 0 || usec < 0 || usec >= 1e6 {
		return "?"
	}
	u := strconv.FormatInt(1e6+usec, 10)[1:] // six digits, zero-padded
	return strconv.FormatInt(sec, 10) + "." + u
}

// readInt reads a signed integer of size 4 or 8 bytes.
func readInt(b []byte, size int, order binary.ByteOrder) int64 {
	if size == 8 {
		return int64(order.Uint64(b))
	}
	return int64(int32(order.Uint32(b)))
}

// startFromSysctl turns a process-record sysctl's answer (rec, err) for
// pid into StartTime's answer: ESRCH or an empty record mean gone ("");
// another error leaves only whether the pid exists ("?" or "").
func startFromSysctl(rec []byte, err error, pid int64, l kinfoLayout, exists func(int64) bool) string {
	switch {
	case errors.Is(err, unix.ESRCH):
		return ""
	case err != nil:
		if exists(pid) {
			return "?"
		}
		return ""
	}
	return l.startTime(rec, pid, binary.NativeEndian)
}

// startMatch is how a recorded start time compares with the current one.
type startMatch int

const (
	startSame    startMatch = iota // both known and equal: the same process
	startDiffers                   // the pid is gone, or both known and different: reused
	startUnknown                   // either side is "?": the kernel would not say
)

// compareStart compares the start time recorded for a pid with what
// StartTime reports for it now. An unknown start time ("?") on either
// side never counts as the same: equal unknowns prove nothing about a
// reused pid.
func compareStart(recorded, current string) startMatch {
	switch {
	case current == "":
		return startDiffers
	case recorded == "?" || current == "?":
		return startUnknown
	case recorded == current:
		return startSame
	}
	return startDiffers
}
