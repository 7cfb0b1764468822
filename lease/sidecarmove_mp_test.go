package lease

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
	"github.com/cleocode/cleolease/internal/testdir"
)

func init() { extraRoles["stream"] = runStream }

// runStream is the role "stream": a holder that is never idle for its
// Linger (1 s): it writes in a loop, each transaction 2 ms of work with a
// 5 ms gap between them, printing "writing" after its first commit, until
// its stdin closes.
func runStream() int {
	path := os.Getenv("CLEOLEASE_DB")
	e, db, ok := openRole(path, time.Second)
	if !ok {
		return 1
	}
	defer e.Close()
	defer db.Close()
	stop := make(chan struct{})
	go func() {
		bufio.NewScanner(os.Stdin).Scan()
		close(stop)
	}()
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return 0
		default:
		}
		h, err := e.Acquire(ctx, "s", "l", req)
		if err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		tx, err := db.BeginTx(ctx, nil)
		if err == nil {
			time.Sleep(2 * time.Millisecond) // the transaction's work
			tx.Exec(`UPDATE counter SET n = n + 1 WHERE id = 1`)
			err = tx.Commit()
		}
		h.Release()
		if err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		if i == 0 {
			fmt.Println("writing")
		}
		time.Sleep(5 * time.Millisecond) // the gap between transactions
	}
}

// removeSidecar removes the liveness files of the database at path as a
// temporary-file cleaner or rm would while processes use them: the
// sidecar, and in the portable tier its directory of lock files.
func removeSidecar(t *testing.T, base string) {
	t.Helper()
	err := os.Remove(platform.SidecarPath(base))
	if runtime.GOOS == "windows" {
		// Go opens the sidecar without FILE_SHARE_DELETE: while a process
		// has it open it cannot be removed, so no waiter is stranded this
		// way there (README "Sidecar files").
		if err == nil {
			t.Fatal("Windows removed a sidecar a process holds open")
		}
		t.Skipf("Windows refuses to remove a sidecar a process holds open: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if platform.Portable {
		if err := os.RemoveAll(base + "-cleolease.d"); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 28 item 2: the sidecar removed while a holder writes without
// pause. A process that opens afterwards locks a new sidecar; the holder,
// never idle for its Linger, must still learn that it waits and hand the
// lane over. On c2e842a the waiter got nothing: its want was in a file the
// holder never tested.
func TestSidecarRemovedWaiterServed(t *testing.T) {
	if !platform.KeepsLocks {
		t.Skip("this platform keeps no liveness locks")
	}
	for _, dir := range []bool{false, true} {
		t.Run(fmt.Sprintf("sidecarDir=%v", dir), func(t *testing.T) {
			path := newDB(t)
			var env []string
			base := path
			if dir {
				d := testdir.New(t)
				env = append(env, "CLEOLEASE_SIDECAR_DIR="+d)
				fi, err := platform.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				r, _, _, err := FileKey(path)
				if err != nil {
					t.Fatal(err)
				}
				base = sidecarBase(r, fi.ID.Dev, fi.ID.Ino, d)
			}
			holder := launch(t, "holder", "stream", path, env...)
			if _, err := holder.Expect("writing", 20*time.Second); err != nil {
				t.Fatal(err)
			}
			removeSidecar(t, base)
			waiter := launch(t, "waiter", "wait", path, append(env, "CLEOLEASE_NAME=late")...)
			if _, err := waiter.Expect("granted", 20*time.Second); err != nil {
				t.Fatalf("the process that opened after the sidecar was removed: %v", err)
			}
			if err := holder.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// launch starts role in a child process on the database at path, spoken
// to with time limits (proctest.Proc); it is killed at the end of the
// test.
func launch(t *testing.T, name, role, path string, env ...string) *proctest.Proc {
	t.Helper()
	p, err := proctest.Launch(name, proctest.Command(append([]string{"CLEOLEASE_ROLE=" + role, "CLEOLEASE_DB=" + path}, env...)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}
