//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package lease

import "time"

// monoNow reads the wall clock where no system-wide monotonic clock is
// at hand (comparable across processes unless the clock is stepped).
func monoNow() int64 { return time.Now().UnixNano() }
