//go:build linux && !cleolease_portable

package platform

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyWatch is the Linux tier's FileWatch. inotify watches by path:
// it opens neither file.
type inotifyWatch struct {
	f         *os.File
	dbWd      int32 // -1 when the database is not watched
	closes    atomic.Int64
	dbChanged atomic.Bool
	wake      func()
	wg        sync.WaitGroup
}

// WatchFiles reports every close of the sidecar and a rename, removal or
// link-count change of the database at db, calling wake after each batch
// of events.
func WatchFiles(sidecar, db string, wake func()) (FileWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, sidecar, unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil, err
	}
	w := &inotifyWatch{dbWd: -1, wake: wake}
	if wd, err := unix.InotifyAddWatch(fd, db, unix.IN_ATTRIB|unix.IN_MOVE_SELF|unix.IN_DELETE_SELF); err == nil {
		w.dbWd = int32(wd)
	}
	w.f = os.NewFile(uintptr(fd), "inotify:"+sidecar)
	w.wg.Add(1)
	go w.run()
	return w, nil
}

func (w *inotifyWatch) run() {
	defer w.wg.Done()
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
			case ev.Wd == w.dbWd:
				w.dbChanged.Store(true)
			case ev.Mask&unix.IN_CLOSE_WRITE != 0:
				w.closes.Add(1)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		w.wake()
	}
}

func (w *inotifyWatch) Closes() int64   { return w.closes.Load() }
func (w *inotifyWatch) DBWatched() bool { return w.dbWd >= 0 }
func (w *inotifyWatch) DBChanged() bool { return w.dbChanged.Load() }
func (w *inotifyWatch) ClearDB()        { w.dbChanged.Store(false) }

func (w *inotifyWatch) Close() error {
	err := w.f.Close()
	w.wg.Wait()
	return err
}
