//go:build linux && !cleolease_portable

package platform

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyWatch is the Linux tier's FileWatch, and its SidecarWatch.
// inotify watches by path: it opens neither file.
type inotifyWatch struct {
	f         *os.File
	fd        int
	dbWd      int32 // -1 when the database is not watched
	closes    atomic.Int64
	dbChanged atomic.Bool
	gone      chan struct{} // SidecarGone (capacity 1)
	wake      func()
	stopped   atomic.Bool // Close was called: no more wakes
}

// sidecarMask is what the watch of a sidecar (and of each file given to
// Follow) reports: closes after writing (a peer's exit: the kernel closes
// its descriptors), and an unlink (a link-count change, IN_ATTRIB; the
// inode's deletion, IN_DELETE_SELF, comes only once nobody has it open),
// or a rename.
const sidecarMask = unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// goneMask is the part of sidecarMask that may mean the file was removed
// or replaced.
const goneMask = unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// WatchFiles reports every close of the sidecar and a rename, removal or
// link-count change of the database at db, calling wake after each batch
// of events; the sidecar's own unlink, rename or link-count change
// signals SidecarGone (SidecarWatch).
func WatchFiles(sidecar, db string, wake func()) (FileWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, sidecar, sidecarMask); err != nil {
		unix.Close(fd)
		return nil, err
	}
	w := &inotifyWatch{fd: fd, dbWd: -1, wake: wake, gone: make(chan struct{}, 1)}
	if wd, err := unix.InotifyAddWatch(fd, db, unix.IN_ATTRIB|unix.IN_MOVE_SELF|unix.IN_DELETE_SELF); err == nil {
		w.dbWd = int32(wd)
	}
	w.f = os.NewFile(uintptr(fd), "inotify:"+sidecar)
	go w.run()
	return w, nil
}

func (w *inotifyWatch) run() {
	buf := make([]byte, 4096)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				w.dbChanged.Store(true)
				w.closes.Add(1) // events were lost: everyone looks
				w.signalGone()
			case ev.Wd == w.dbWd:
				w.dbChanged.Store(true)
			case ev.Mask&unix.IN_CLOSE_WRITE != 0:
				w.closes.Add(1)
			case ev.Mask&goneMask != 0:
				w.signalGone()
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		if w.stopped.Load() {
			return
		}
		w.wake()
	}
}

// signalGone signals SidecarGone without blocking (one pending signal is
// enough: the receiver checks the files' paths, not the events).
func (w *inotifyWatch) signalGone() {
	select {
	case w.gone <- struct{}{}:
	default:
	}
}

func (w *inotifyWatch) SidecarGone() <-chan struct{} { return w.gone }

// Follow watches the file path names now as the sidecar's are watched:
// its closes count as exits, its unlink signals SidecarGone. The watches
// of earlier files stay (inotify watches an inode: the old sidecar's
// closes are still the exits of the peers that have not moved).
func (w *inotifyWatch) Follow(path string) error {
	_, err := unix.InotifyAddWatch(w.fd, path, sidecarMask)
	return err
}

func (w *inotifyWatch) Closes() int64   { return w.closes.Load() }
func (w *inotifyWatch) DBWatched() bool { return w.dbWd >= 0 }
func (w *inotifyWatch) DBChanged() bool { return w.dbChanged.Load() }
func (w *inotifyWatch) ClearDB()        { w.dbChanged.Store(false) }

// Close stops the watch and returns at once. Releasing an inotify
// instance waits in the kernel for an SRCU grace period (about 7 ms a
// close, measured on Linux 6.x: most of what a sql.Open–Close cycle cost),
// so the descriptor is closed on a goroutine of its own, and the reading
// goroutine ends with it. The watch's wake may still run once, for a batch
// of events being read as Close is called (the doorbell's wake only
// signals waiters: harmless after its close).
func (w *inotifyWatch) Close() error {
	if w.stopped.Swap(true) {
		return nil
	}
	go w.f.Close()
	return nil
}
