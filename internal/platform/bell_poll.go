//go:build cleolease_pollwake || !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package platform

// RefusesUnbound reports whether a datagram to a holder's doorbell is
// refused when none is bound: false in a build without doorbells.
const RefusesUnbound = false

const pollWake = true

// ListenBell reports no datagram transport in this build (the build tag
// cleolease_pollwake) or on this platform (none of Linux, macOS, the
// BSDs, Windows): the engine's waiters poll the lane with a capped
// back-off instead.
func ListenBell(dbPath, holderID string, file FileID) (Bell, error) { return nil, ErrUnsupported }
