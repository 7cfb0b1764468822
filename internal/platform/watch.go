package platform

// FileWatch reports what the kernel can tell about the files of one
// database without opening the database: closes of the sidecar (how a
// peer's exit shows up, whatever killed it) and a rename, removal or
// link-count change of the database file (so that the identity check
// needs a stat only then). Only the Linux tier has one (inotify, which
// watches by path and holds no descriptor of the files); elsewhere
// WatchFiles fails with ErrUnsupported and the engine stats the database
// on every identity check, and learns of exits by WatchExit.
type FileWatch interface {
	// Closes counts closes of the sidecar since the watch began (and
	// moves when events were lost).
	Closes() int64
	// DBWatched reports whether the database file itself is watched.
	DBWatched() bool
	// DBChanged reports whether the database file may have been renamed,
	// removed or re-linked since the last ClearDB.
	DBChanged() bool
	// ClearDB records that a stat found the database file unchanged.
	ClearDB()
	// Close stops the watch.
	Close() error
}

// SidecarWatch is a FileWatch that also reports that the liveness files
// may have been removed or replaced (inotify, Linux tier), so that the
// engine checks them at once (Follower.Refresh) rather than at its next
// heartbeat.
type SidecarWatch interface {
	// SidecarGone receives a value (at most one pending) after the
	// sidecar, or a file given to Follow, was unlinked, renamed or had its
	// link count changed, or after events were lost.
	SidecarGone() <-chan struct{}
	// Follow watches the file path names now like the sidecar: after a
	// move, the new sidecar; for the sidecar directory's nonce, its
	// removal.
	Follow(path string) error
}
