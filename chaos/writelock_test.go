//go:build unix

package chaos

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The write-lock probe: which process holds SQLite's write lock, asked of
// the kernel (F_GETLK) without taking it. A writer SIGSTOPped inside a
// lease-engine transaction (a claim, a reclaim, a queue row) holds the
// write lock while the active row names somebody else — a dead holder it
// was reclaiming, say — and nobody can write until it resumes or dies;
// the idle check excludes that time (analyzeIdle), as it does a stopped
// holder's row. Seen 2026-12-06 in CI: a waiter stopped 8 ms into its
// wait, inside the transaction that reclaimed a killed holder's row, left
// the lane idle for 1.2 s until it was killed.
//
// The probe runs in a process of its own (role "lockprobe"): it opens the
// database's files outside SQLite, and closing such a descriptor would
// drop every POSIX lock its process holds on the file — the test process
// has SQLite connections of its own. The probe process has none.

// The write lock's byte, as SQLite's unix VFS places it (sqlite3.c): in
// WAL mode the -shm file's WAL_WRITE_LOCK, UNIX_SHM_BASE =
// (22+SQLITE_SHM_NLOCK)*4 = 120, plus lock 0; with a rollback journal the
// database file's RESERVED_BYTE, PENDING_BYTE+1.
const (
	shmWriteLockByte = 120
	reservedByte     = 0x40000000 + 1
)

// envLockFile and envLockByte tell the probe process what to probe.
const (
	envLockFile = "CLEOLEASE_CHAOS_LOCK_FILE"
	envLockByte = "CLEOLEASE_CHAOS_LOCK_BYTE"
)

func init() { roles["lockprobe"] = lockProbeMain }

// lockProbeMain answers each line read from stdin — "?" and, after a
// space, the comma-separated pids of the writers stopped now — with one
// line: the pid holding a write lock on byte $CLEOLEASE_CHAOS_LOCK_BYTE of
// $CLEOLEASE_CHAOS_LOCK_FILE, 0 when nobody does (or the file does not
// exist yet), -1 when somebody does whom the kernel does not name and who
// is none of the stopped writers, or "E <error>". The kernel names the
// owner of a POSIX record lock (go-sqlite3's and modernc's); an
// open-file-description lock (ncruces's on Linux) has none, so the
// stopped writers' /proc/PID/fdinfo are searched for it.
func lockProbeMain() int {
	file := os.Getenv(envLockFile)
	at, err := strconv.ParseInt(os.Getenv(envLockByte), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockprobe:", err)
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var stopped []int64
		if _, list, ok := strings.Cut(in.Text(), " "); ok {
			for _, f := range strings.Split(list, ",") {
				if pid, err := strconv.ParseInt(f, 10, 64); err == nil {
					stopped = append(stopped, pid)
				}
			}
		}
		pid, err := writeLockHolder(file, at, stopped)
		if err != nil {
			fmt.Fprintf(out, "E %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Fprintf(out, "%d\n", pid)
		}
		if out.Flush() != nil {
			return 1
		}
	}
	return 0
}

// writeLockHolder is one probe (see lockProbeMain). It opens the file
// afresh each time, read-only, so that a file removed and created again
// is the one probed.
func writeLockHolder(file string, at int64, stopped []int64) (int64, error) {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: at, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, err
	}
	switch {
	case lk.Type != unix.F_WRLCK:
		return 0, nil // free, or only read-locked (nobody writes)
	case lk.Pid > 0:
		return int64(lk.Pid), nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	dev := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	for _, pid := range stopped {
		if holdsOFDWrite(pid, dev, at) {
			return pid, nil
		}
	}
	return -1, nil
}

// holdsOFDWrite reports whether process pid holds, through one of its
// descriptors, an open-file-description write lock on byte at of the file
// dev ("major:minor:inode", as proc(5)'s /proc/locks writes it), as its
// /proc/PID/fdinfo lines say ("lock:\t1: OFDLCK ADVISORY  WRITE -1
// fd:01:1835330 120 120"; the end "EOF" for a lock to the end of the
// file). Linux only; false elsewhere or when pid is gone.
func holdsOFDWrite(pid int64, dev string, at int64) bool {
	dir := "/proc/" + strconv.FormatInt(pid, 10) + "/fdinfo"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			// lock: 1: OFDLCK ADVISORY WRITE -1 dev start end
			if len(f) < 9 || f[0] != "lock:" || f[2] != "OFDLCK" || f[4] != "WRITE" || f[6] != dev {
				continue
			}
			start, err1 := strconv.ParseInt(f[7], 10, 64)
			end, err2 := strconv.ParseInt(f[8], 10, 64)
			if f[8] == "EOF" {
				end, err2 = 1<<62, nil
			}
			if err1 == nil && err2 == nil && start <= at && at <= end {
				return true
			}
		}
	}
	return false
}

// writeLockProbe is the test process's end of a probe process.
type writeLockProbe struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startWriteLockProbe starts a probe of the write lock of the database at
// path in journal mode journal ("" for WAL).
func startWriteLockProbe(path, journal string) (*writeLockProbe, error) {
	file, at := path+"-shm", int64(shmWriteLockByte)
	if journal != "" {
		file, at = path, reservedByte
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=lockprobe", envLockFile+"="+file, envLockByte+"="+strconv.FormatInt(at, 10))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &writeLockProbe{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// holder asks the probe who holds the write lock now (see
// lockProbeMain); stopped are the writers stopped now.
func (p *writeLockProbe) holder(stopped []int64) (int64, error) {
	req := "?"
	for i, pid := range stopped {
		sep := ","
		if i == 0 {
			sep = " "
		}
		req += sep + strconv.FormatInt(pid, 10)
	}
	if _, err := io.WriteString(p.in, req+"\n"); err != nil {
		return 0, err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return 0, err
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "E "); ok {
		return 0, fmt.Errorf("lockprobe: %s", msg)
	}
	return strconv.ParseInt(line, 10, 64)
}

// close ends the probe process.
func (p *writeLockProbe) close() error {
	p.in.Close()
	return p.cmd.Wait()
}
