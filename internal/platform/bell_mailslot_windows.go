//go:build windows && !cleolease_pollwake

package platform

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/windows"
)

// RefusesUnbound reports whether a datagram to a holder's doorbell on a
// file is refused when that holder has no doorbell bound on the file:
// false on Windows (a mailslot that does not exist is not told apart from
// one that cannot be opened).
const RefusesUnbound = false

const pollWake = false

// maxMailslotDatagram is the largest message a cleolease mailslot takes
// (CreateMailslot's nMaxMessageSize; the doorbell's own limit is lower).
const maxMailslotDatagram = 60 << 10

// mailslotReadTimeout bounds a blocked ReadFile (ms): Close wakes the
// reader with a message of its own, and this only backs that up.
const mailslotReadTimeout = 1000

var (
	kernel32            = windows.NewLazySystemDLL("kernel32.dll")
	procCreateMailslot  = kernel32.NewProc("CreateMailslotW")
	procGetMailslotInfo = kernel32.NewProc("GetMailslotInfo")
)

// mailslotBell is a Bell on a Windows mailslot (a datagram queue in the
// kernel: a write is one message, never blocks, and fails at once when
// nobody owns the name). This process reads its own mailslot, named by
// mailslotName; a Send opens the peer's, writes one message and closes it.
type mailslotBell struct {
	h      windows.Handle
	file   FileID
	self   string // this bell's mailslot name
	closed atomic.Bool
	mu     sync.Mutex // held by Recv while it reads; Close takes it to close h
	rbuf   []byte     // Recv's read buffer: one byte more than a message may have
}

// ListenBell creates this process's doorbell on the database file: the
// mailslot named after the file's identity and the holder id
// (mailslotName). The mailslot grants write access to everyone (and all
// access to this user), so that processes of other users sharing the
// database reach it, as the portable tier's sockets do; where Windows
// refuses that security descriptor, the default one (this user, SYSTEM,
// administrators) is used. A message is only a hint (a wake-up, a
// registration that a holder checks against the liveness locks and the
// database before acting on it), never trusted for exclusion.
func ListenBell(dbPath, holderID string, file FileID) (Bell, error) {
	name := mailslotName(file, holderID)
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	var h windows.Handle
	if sa := everyoneWrites(); sa != nil {
		h, err = createMailslot(p, sa)
	}
	if h == 0 {
		if h, err = createMailslot(p, nil); err != nil {
			return nil, err
		}
	}
	return &mailslotBell{h: h, file: file, self: name, rbuf: make([]byte, maxMailslotDatagram+1)}, nil
}

// createMailslot is CreateMailslotW with this package's message size
// limit and read timeout.
func createMailslot(name *uint16, sa *windows.SecurityAttributes) (windows.Handle, error) {
	r, _, err := procCreateMailslot.Call(uintptr(unsafe.Pointer(name)), maxMailslotDatagram, mailslotReadTimeout, uintptr(unsafe.Pointer(sa)))
	if windows.Handle(r) == windows.InvalidHandle {
		return 0, err
	}
	return windows.Handle(r), nil
}

// nextMessageSize returns the size of the message at the head of the
// mailslot h (GetMailslotInfo).
func nextMessageSize(h windows.Handle) (uint32, error) {
	var next uint32
	r, _, err := procGetMailslotInfo.Call(uintptr(h), 0, uintptr(unsafe.Pointer(&next)), 0, 0)
	if r == 0 {
		return 0, err
	}
	return next, nil
}

// everyoneWrites returns security attributes granting this user all
// access and everyone write access, or nil when the user's SID cannot
// be read or the descriptor built.
func everyoneWrites() *windows.SecurityAttributes {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;" + tu.User.Sid.String() + ")(A;;FW;;;WD)")
	if err != nil {
		return nil
	}
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
}

func (b *mailslotBell) MaxDatagram() int { return maxMailslotDatagram }

// Recv reads the next message into buf. A message longer than buf or
// than maxMailslotDatagram (only another program sends one) is dropped,
// not left at the head of the mailslot: it is read whole into a scratch
// buffer (Windows fails a short read with ERROR_INSUFFICIENT_BUFFER and
// keeps the message), or seen to fill b.rbuf (Wine 8 accepts messages
// over the mailslot's maximum and truncates a short read without an
// error).
func (b *mailslotBell) Recv(buf []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.closed.Load() {
			return 0, net.ErrClosed
		}
		var n uint32
		err := windows.ReadFile(b.h, b.rbuf, &n, nil)
		switch {
		case b.closed.Load():
			return 0, net.ErrClosed
		case err == nil:
			if n > 0 && int(n) <= maxMailslotDatagram && int(n) <= len(buf) {
				return copy(buf, b.rbuf[:n]), nil
			}
		case errors.Is(err, windows.ERROR_SEM_TIMEOUT):
		case errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER):
			size, err := nextMessageSize(b.h)
			if err != nil {
				return 0, err
			}
			windows.ReadFile(b.h, make([]byte, size), &n, nil)
		default:
			return 0, err
		}
	}
}

// Send writes msg to the mailslot of the engine whose holder id is to.
// It never blocks (a mailslot write is queued by the kernel) and fails at
// once when no process owns that mailslot.
func (b *mailslotBell) Send(to string, msg []byte) error {
	if len(msg) > maxMailslotDatagram {
		return windows.ERROR_MORE_DATA
	}
	return writeMailslot(mailslotName(b.file, to), msg)
}

// writeMailslot writes msg as one message to the mailslot name.
func writeMailslot(name string, msg []byte) error {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_WRITE, windows.FILE_SHARE_READ, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	var n uint32
	if err := windows.WriteFile(h, msg, &n, nil); err != nil {
		return err
	}
	if int(n) != len(msg) {
		return windows.ERROR_WRITE_FAULT
	}
	return nil
}

// Close wakes a blocked Recv with a message to this mailslot (a blocking
// ReadFile on another thread is not ended by closing its handle), waits
// for it to return, and closes the mailslot, which frees its name.
func (b *mailslotBell) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	writeMailslot(b.self, []byte{0})
	b.mu.Lock()
	defer b.mu.Unlock()
	return windows.CloseHandle(b.h)
}
