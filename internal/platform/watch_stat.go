//go:build !linux || cleolease_portable

package platform

// WatchFiles reports no watch here: kqueue would need an open descriptor
// of each watched file, and closing a descriptor of the database drops
// SQLite's POSIX locks (sqlite.org/howtocorrupt.html §2.2). The engine
// stats the database on every identity check instead, and learns of a
// peer's exit by WatchExit.
func WatchFiles(sidecar, db string, wake func()) (FileWatch, error) { return nil, ErrUnsupported }
