package platform

// Turn is the file's write turn: one exclusive kernel lock that a process
// holds around each leased write transaction, so that writers of every
// lane of every process take SQLite's write lock one after another,
// waiting in the kernel instead of in SQLite's busy handler (package
// lease, writeturn.go, holds it; the bytes and files it is kept on are in
// locks_bytes.go and locks_flock.go). It belongs to the open file, like
// every lock here: two goroutines of one process never conflict on it, so
// the caller lets one of them hold it at a time.
type Turn interface {
	// Try takes the turn without waiting: false (and nil) when another
	// open file holds it.
	Try() (bool, error)
	// Wait takes the turn, waiting for as long as another open file holds
	// it. Nothing interrupts the wait: the kernel restarts it after a
	// signal, and closing the file does not end it (when it is granted
	// after a Close, the lock goes with the file's last reference).
	Wait() error
	// Drop releases the turn.
	Drop() error
}

// TurnQueue is implemented by the Turns whose waiting processes announce
// themselves (the Linux tier's OFD locks), so that a process that finds
// the turn free while another one waits for it lets that one go first:
// the kernel wakes a waiter when the turn is dropped, but a process that
// asks in that moment would otherwise take it first, again and again.
type TurnQueue interface {
	// Wanted reports whether another process announces that it waits.
	Wanted() (bool, error)
	// Yield waits until a process that announces that it waits no longer
	// does (it got the turn, gave up or died); at once when none does.
	// Like Wait, nothing interrupts it.
	Yield() error
	// Announce announces (on) or withdraws this process's wait.
	Announce(on bool) error
}

// Turns is implemented by the Locks that OpenLocks returns where the OS
// gives a blocking exclusive lock (every platform with Locks): Turn
// returns the write turn of the newest liveness files, or nil when there
// is none (a read-only Locks).
type Turns interface {
	Turn() Turn
}

// TurnOf returns the write turn of l, or nil when l has none.
func TurnOf(l Locks) Turn {
	if t, ok := l.(Turns); ok {
		return t.Turn()
	}
	return nil
}
