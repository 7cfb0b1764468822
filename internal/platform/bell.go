package platform

// Bell is the wake-up transport of one process on one database: it
// receives datagrams addressed to this process and sends datagrams to
// another process of the same database, named by its holder id. Sends
// never block: a datagram to a process that is gone fails at once, one to
// a full queue fails with ErrFull. Delivery is best effort: every process
// also polls, more slowly, for what no datagram reports.
type Bell interface {
	// Send delivers msg to the process whose holder id is to.
	Send(to string, msg []byte) error
	// Recv returns the next datagram received from a process allowed to
	// send (of this user where the kernel tells), copied into buf; an
	// error once closed.
	Recv(buf []byte) (int, error)
	// MaxDatagram is the largest datagram Send delivers.
	MaxDatagram() int
	// Close stops receiving (Recv returns an error) and releases the
	// address.
	Close() error
}

// PollWake reports a build without a datagram transport (the build tag
// cleolease_pollwake, or a platform that has none): ListenBell fails with
// ErrUnsupported and waiters poll with a capped back-off.
const PollWake = pollWake
