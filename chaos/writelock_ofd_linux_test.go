package chaos

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cleocode/cleolease/internal/testdir"
)

// TestWriteLockProbeFindsAStoppedOFDHolder: an open-file-description
// write lock (ncruces's kind on Linux), which the kernel reports with no
// owner pid, is named by the probe when its owner is among the stopped
// writers it is given, and is left unnamed (-1: not excluded) otherwise.
func TestWriteLockProbeFindsAStoppedOFDHolder(t *testing.T) {
	path := filepath.Join(testdir.New(t), "ofd.db")
	if err := os.WriteFile(path+"-shm", make([]byte, 256), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path+"-shm", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: shmWriteLockByte, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	p, err := startWriteLockProbe(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	me := int64(os.Getpid())
	for _, tc := range []struct {
		stopped []int64
		want    int64
	}{
		{nil, -1},
		{[]int64{me + 1_000_000}, -1},
		{[]int64{me + 1_000_000, me}, me},
	} {
		got, err := p.holder(tc.stopped)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("stopped %v: the probe names %d, want %d", tc.stopped, got, tc.want)
		}
	}
}
