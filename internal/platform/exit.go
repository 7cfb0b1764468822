package platform

// WatchExit calls fn once when the process pid exits (at once if it has
// already), until stop is called; fn runs on a goroutine of its own. Where
// the watch fails after it started (kqueue), fn is called too, after a
// warning to slog.Default, so that a waiter re-checks rather than waits.
// ErrUnsupported where the kernel cannot report a process's exit. A pid
// reused after the exit is not confused with the process watched: the
// watch is on the process, not the number.
//
// Linux: a pidfd (pidfd_open), pollable once the process exits; macOS and
// the BSDs: kqueue's EVFILT_PROC with NOTE_EXIT; Windows: waiting on a
// process handle.
