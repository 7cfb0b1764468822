package cleolease_test

// Restores and copies of a leased file (issue 31, item 3): a backup brought
// back over the file, by the backup API while processes keep it open or
// after they all stopped, and a copy opened beside the original while its
// holders hold the lease there. Every epoch issued after the restore
// exceeds every epoch issued before it; a restored row that names a
// running process is neither taken by it as its grant nor left standing
// in its waiters' way; a copy is leased at once, not after its holders on
// the original let go.

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/cleocode/cleolease/internal/platform"
)

// restoreBackup writes a backup of the database at path to a new file
// beside it (VACUUM INTO, through SQLite) and returns its path.
func restoreBackup(t *testing.T, path, name string) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(path), name)
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`VACUUM INTO ?`, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// restoreInto copies the database at src over the one at dst in place
// with SQLite's backup API (the inode is kept: processes that have dst
// open see its content replaced, as after sqlite3's .restore), taking no
// lease.
func restoreInto(t *testing.T, src, dst string) {
	t.Helper()
	ctx := context.Background()
	open := func(p string) (*sql.DB, *sql.Conn) {
		db, err := sql.Open("sqlite3", "file:"+p+"?_busy_timeout=10000")
		if err != nil {
			t.Fatal(err)
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return db, c
	}
	sdb, sc := open(src)
	defer sdb.Close()
	defer sc.Close()
	ddb, dc := open(dst)
	defer ddb.Close()
	defer dc.Close()
	err := dc.Raw(func(d any) error {
		return sc.Raw(func(s any) error {
			var err error
			eventually(t, "the backup API to copy the backup over the file", func() bool {
				var bk *sqlite3.SQLiteBackup
				bk, err = d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
				if err != nil {
					return !busy(err)
				}
				var done bool
				done, err = bk.Step(-1)
				if ferr := bk.Finish(); err == nil {
					err = ferr
				}
				return done || (err != nil && !busy(err))
			})
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func busy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// maxEpoch is the highest epoch the lease rows of the file at path carry:
// every epoch issued on it so far (a lane keeps its high-water epoch).
func maxEpoch(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	if err := relQueryRow(t, path, `SELECT coalesce(max(epoch), 0) FROM _writer_leases`, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// itemEpochs returns the epoch each item of the file at path whose value
// starts with prefix was written under (insertItem records it).
func itemEpochs(t *testing.T, path, prefix string) map[string]int64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT v, coalesce(epoch, 0) FROM items WHERE substr(v, 1, length(?1)) = ?1`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var v string
		var e int64
		if err := rows.Scan(&v, &e); err != nil {
			t.Fatal(err)
		}
		out[v] = e
	}
	return out
}

// write has p insert v (autocommit, under its Lease if it holds one) and
// fails unless it was acknowledged.
func (p *proc) write(t *testing.T, v string) {
	t.Helper()
	p.send("exec " + v)
	if got := p.next(t, "RES"); got != "ok" {
		t.Fatalf("child %d: write %s: %s", p.pid, v, got)
	}
}

// wantAbove fails unless every item written with prefix is present and
// carries an epoch above floor.
func wantAbove(t *testing.T, path, prefix string, acked []string, floor int64) {
	t.Helper()
	got := itemEpochs(t, path, prefix)
	for _, v := range acked {
		e, ok := got[v]
		if !ok {
			t.Fatalf("acknowledged write %s is missing", v)
		}
		if e <= floor {
			t.Fatalf("write %s under epoch %d, issued before the restore (the file had issued up to %d)", v, e, floor)
		}
	}
}

// TestRestoreStopRestoreRestart: processes write under the lease, the file
// is backed up, more grants follow, everything stops, the backup is
// restored over the file, and new processes write: every epoch they are
// granted exceeds every epoch the file issued before the restore,
// including those the backup missed (a reclaim or a claim of the restored
// rows counts on from them no more).
func TestRestoreStopRestoreRestart(t *testing.T) {
	path, _ := newFile(t)
	dsn := "file:" + path + "?_lease_linger=0"
	a := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
	b := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
	a.next(t, "READY")
	b.next(t, "READY")
	for i := 0; i < 3; i++ {
		a.write(t, "before-a-"+strconv.Itoa(i))
		b.write(t, "before-b-"+strconv.Itoa(i))
	}
	// The backup holds a row that names b: held (b keeps its Lease), so
	// that the restored file brings back an active row of a dead holder
	// too.
	b.send("acquire")
	b.next(t, "HELD")
	backup := restoreBackup(t, path, "backup.db")
	b.send("release")
	b.next(t, "RELEASED")
	for i := 3; i < 6; i++ {
		a.write(t, "before-a-"+strconv.Itoa(i))
		b.write(t, "before-b-"+strconv.Itoa(i))
	}
	a.send("exit")
	b.send("exit")
	a.Cmd.Wait()
	b.Cmd.Wait()
	issued := maxEpoch(t, path)
	restoreInto(t, backup, path)
	if got := maxEpoch(t, path); got >= issued {
		t.Fatalf("the restored file carries epoch %d, want below %d (the backup's)", got, issued)
	}
	c := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
	d := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
	c.next(t, "READY")
	d.next(t, "READY")
	var acked []string
	for i := 0; i < 3; i++ {
		for _, p := range []*proc{c, d} {
			v := "after-" + strconv.Itoa(p.pid) + "-" + strconv.Itoa(i)
			p.write(t, v)
			acked = append(acked, v)
		}
	}
	wantAbove(t, path, "after-", acked, issued)
	c.send("exit")
	d.send("exit")
	c.Cmd.Wait()
	d.Cmd.Wait()
}

// TestRestoreInPlaceUnderRunningProcesses: a backup is restored over the
// file in place (the backup API: the inode is kept) while the processes
// that wrote it keep it open. Its rows name one of them at an old epoch.
// That process, holding the lane at the restore, loses it (ErrLeaseLost),
// and its waiter is not left behind the restored row; a process the
// restored row names does not take it as its grant; and a waiter is
// granted the lane while the restored row names a live process that holds
// nothing. Every epoch granted after a restore exceeds every epoch issued
// before it, and every write acknowledged after it is in the file.
func TestRestoreInPlaceUnderRunningProcesses(t *testing.T) {
	if platform.PollWake {
		t.Skip("no doorbell in this build (cleolease_pollwake): the restored row's process learns of a waiter at its heartbeat's sweep, TTL/3 (an hour here)")
	}
	path, _ := newFile(t)
	dsn := "file:" + path + "?_lease_linger=0&_lease_ttl=1h"
	a := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
	b := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
	a.next(t, "READY")
	b.next(t, "READY")
	// The backup: a's row, active.
	a.send("acquire")
	a.next(t, "HELD")
	a.write(t, "old-a-0")
	backup := restoreBackup(t, path, "backup.db")
	a.write(t, "old-a-1")
	a.send("release")
	a.next(t, "RELEASED")
	b.send("acquire")
	b.next(t, "HELD")
	b.write(t, "old-b-0")
	b.send("release")
	b.next(t, "RELEASED")
	a.send("acquire")
	a.next(t, "HELD")
	a.write(t, "old-a-2")

	// 1. Restored while a holds the lane at a later epoch: a's writes are
	// fenced off, and b, waiting, is granted the lane.
	issued := maxEpoch(t, path)
	restoreInto(t, backup, path)
	a.send("exec lost-a")
	if got := a.next(t, "RES"); !strings.HasPrefix(got, "lost") {
		t.Fatalf("a's write under its lease after the restore: %s, want lost", got)
	}
	a.send("release")
	a.next(t, "RELEASED")
	b.send("acquire")
	if ep := atoi64(t, b.next(t, "HELD")); ep <= issued {
		t.Fatalf("b granted epoch %d after the restore; the file had issued up to %d", ep, issued)
	}
	acked := []string{"after1-b"}
	b.write(t, "after1-b")
	b.send("release")
	b.next(t, "RELEASED")
	wantAbove(t, path, "after1-", acked, issued)

	// 2. Restored while nobody holds the lane: a, named by the restored
	// row, does not take it as handed to it.
	issued = maxEpoch(t, path)
	restoreInto(t, backup, path)
	a.send("acquire")
	if ep := atoi64(t, a.next(t, "HELD")); ep <= issued {
		t.Fatalf("a granted epoch %d after the restore (its restored row's?); the file had issued up to %d", ep, issued)
	}
	acked = []string{"after2-a"}
	a.write(t, "after2-a")
	a.send("release")
	a.next(t, "RELEASED")
	wantAbove(t, path, "after2-", acked, issued)

	// 3. Restored while nobody holds the lane: b is granted it, although
	// the restored row names a, alive, which holds nothing.
	issued = maxEpoch(t, path)
	restoreInto(t, backup, path)
	b.send("acquire")
	if ep := atoi64(t, b.next(t, "HELD")); ep <= issued {
		t.Fatalf("b granted epoch %d after the restore; the file had issued up to %d", ep, issued)
	}
	acked = []string{"after3-b"}
	b.write(t, "after3-b")
	b.send("release")
	b.next(t, "RELEASED")
	a.write(t, "after3-a")
	acked = append(acked, "after3-a")
	wantAbove(t, path, "after3-", acked, issued)
	a.send("exit")
	b.send("exit")
	a.Cmd.Wait()
	b.Cmd.Wait()
}

// TestRestoreCopyOpenedBeside: a copy of the file (VACUUM INTO, taken while
// a process holds the lease on the original) is opened by another
// process, which is granted the lane on the copy at once — the holder its
// rows name is alive, but on the original, and will never hand it on
// here; the TTL (an hour) plays no part — at an epoch above the copy's.
func TestRestoreCopyOpenedBeside(t *testing.T) {
	if runtime.GOOS != "linux" || platform.Portable || platform.PollWake {
		t.Skip("only Linux's doorbell, named after the file's inode, proves that a live holder has not opened the copy; elsewhere its rows wait for it")
	}
	path, _ := newFile(t)
	a := spawn(t, "intercept-hold", "file:"+path+"?_lease_ttl=1h", "GORACE=atexit_sleep_ms=0")
	a.next(t, "READY")
	a.write(t, "orig-0")
	a.send("acquire")
	a.next(t, "HELD")
	a.write(t, "orig-1")
	cp := restoreBackup(t, path, "copy.db")
	copied := maxEpoch(t, cp)
	c := spawn(t, "intercept-hold", "file:"+cp+"?_lease_ttl=1h", "GORACE=atexit_sleep_ms=0")
	c.next(t, "READY")
	c.send("acquire")
	if ep := atoi64(t, c.next(t, "HELD")); ep <= copied {
		t.Fatalf("granted epoch %d on the copy, which carries %d", ep, copied)
	}
	c.write(t, "copy-0")
	c.send("release")
	c.next(t, "RELEASED")
	c.write(t, "copy-1")
	wantAbove(t, cp, "copy-", []string{"copy-0", "copy-1"}, copied)
	// The original's holder is undisturbed.
	a.write(t, "orig-2")
	a.send("release")
	a.next(t, "RELEASED")
	if got := relItems(t, path); !got["orig-2"] || got["copy-0"] {
		t.Fatalf("the original holds %v", got)
	}
	a.send("exit")
	c.send("exit")
	a.Cmd.Wait()
	c.Cmd.Wait()
}

// TestRestoreInPlaceWhileWriting: three processes write back to back while
// a backup is restored over the file in place. Writes in flight at the
// restore may be fenced off (ErrLeaseLost) or undone with it; every write
// sent after the restore returned and acknowledged is in the file, under
// an epoch above every epoch issued before the restore, and no epoch is
// written by two processes.
func TestRestoreInPlaceWhileWriting(t *testing.T) {
	if platform.PollWake {
		t.Skip("no doorbell in this build (cleolease_pollwake): see TestRestoreInPlaceUnderRunningProcesses")
	}
	path, _ := newFile(t)
	dsn := "file:" + path + "?_lease_ttl=1h"
	type ack struct {
		v     string
		after bool // sent after the restore returned
	}
	var (
		restored atomic.Bool
		stop     atomic.Bool
		mu       sync.Mutex
		acks     []ack
		counts   = map[int][2]int{} // per child: acknowledged before, after
		wg       sync.WaitGroup
	)
	var kids []*proc
	for range 3 {
		p := spawn(t, "intercept-hold", dsn, "GORACE=atexit_sleep_ms=0")
		p.next(t, "READY")
		kids = append(kids, p)
	}
	for _, p := range kids {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				after := restored.Load()
				v := "w-" + strconv.Itoa(p.pid) + "-" + strconv.Itoa(i)
				p.send("exec " + v)
				var line string
				select {
				case l, ok := <-p.lines:
					if !ok {
						t.Errorf("child %d ended", p.pid)
						return
					}
					line = l
				case <-time.After(20 * time.Second):
					t.Errorf("child %d: no answer to write %s within 20s", p.pid, v)
					return
				}
				switch res := strings.TrimPrefix(line, "RES "); {
				case res == "ok":
					mu.Lock()
					acks = append(acks, ack{v, after})
					c := counts[p.pid]
					if after {
						c[1]++
					} else {
						c[0]++
					}
					counts[p.pid] = c
					mu.Unlock()
				case strings.HasPrefix(res, "lost"):
				default:
					t.Errorf("child %d: write %s: %s", p.pid, v, line)
					return
				}
			}
		})
	}
	each := func(i, n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range kids {
				if counts[p.pid][i] < n {
					return false
				}
			}
			return !t.Failed()
		}
	}
	eventually(t, "every process to write", each(0, 5))
	backup := restoreBackup(t, path, "backup.db")
	eventually(t, "every process to write after the backup", each(0, 15))
	issued := maxEpoch(t, path)
	restoreInto(t, backup, path)
	restored.Store(true)
	eventually(t, "every process to write after the restore", each(1, 10))
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	var after []string
	for _, a := range acks {
		if a.after {
			after = append(after, a.v)
		}
	}
	wantAbove(t, path, "w-", after, issued)
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT v, coalesce(epoch, 0), coalesce(pid, 0) FROM items WHERE epoch IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	byEpoch := map[int64]int64{}
	for rows.Next() {
		var v string
		var e, pid int64
		if err := rows.Scan(&v, &e, &pid); err != nil {
			t.Fatal(err)
		}
		if was, ok := byEpoch[e]; ok && was != pid {
			t.Errorf("epoch %d written by pids %d and %d", e, was, pid)
		}
		byEpoch[e] = pid
	}
	for _, p := range kids {
		p.send("exit")
		p.Cmd.Wait()
	}
}
