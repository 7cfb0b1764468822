//go:build linux

package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
)

// A holder in its own pid namespace (a container sharing the volume)
// whose liveness lock this process cannot test — its sidecar was replaced
// while it ran, so the mark its row records is not the file this process
// locked — is unknown, never dead: this process does not take the lane
// while the holder's heartbeat is fresh, and the holder's next commit
// succeeds (issue 28 item 3: it was judged dead, "liveness lock released
// (other pid namespace)", and robbed; its commit failed "lease lost").
// The child is started with CLONE_NEWPID, which needs root: CI runs as
// root, so there a missing privilege fails the test instead of skipping it.
func TestHolderInAnotherPIDNamespaceIsNotRobbed(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CLONE_NEWPID needs root, and CI runs this test as root")
		}
		t.Skip("CLONE_NEWPID needs root")
	}
	path := newDB(t)
	cmd := proctest.Command("CLEOLEASE_ROLE=hold", "CLEOLEASE_DB="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	holder := &child{proctest.StartCmd(t, cmd)}
	holder.expect("held")

	// The holder cannot notice anything while stopped: the sidecar it
	// locked is removed, and this process opens a new one.
	if err := holder.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	// kill returns before the child stops: wait until the kernel shows it
	// stopped, so that it cannot see the sidecar go (it would move to the
	// new one, and be seen alive there).
	stat := fmt.Sprintf("/proc/%d/stat", holder.Cmd.Process.Pid)
	eventually(t, "the holder stopped", func() bool {
		b, err := os.ReadFile(stat)
		i := bytes.LastIndexByte(b, ')')
		return err == nil && i > 0 && i+2 < len(b) && b[i+2] == 'T'
	})
	defer func() {
		if stopped {
			holder.Cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	for _, p := range []string{platform.SidecarPath(path), platform.SidecarPath(path) + ".d"} { // (the portable tier's directory)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	e := openEngine(t, path, nil)
	ctx := context.Background()
	r, err := e.lane("s", "l").readActive(ctx)
	if err != nil || r == nil {
		t.Fatalf("the holder's row: %v, %v", r, err)
	}
	if pidNamespace() == "-" || r.h.Start == "" {
		t.Fatalf("no pid namespace recorded (holder_start %q, ours %q)", r.h.Start, pidNamespace())
	}
	if v := e.probe(r.h); v.state != platform.ProcUnknown {
		t.Fatalf("verdict on the live holder in another pid namespace: %v (%s), want unknown", v.state, v.reason)
	}
	// Its heartbeat is fresh (TTL one hour): the wait ends at its bound,
	// without the lane.
	h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: 50 * time.Millisecond, Require: true})
	if err == nil {
		h.Release()
		t.Fatalf("took the lane of a live holder (epoch %d)", h.Epoch())
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire: %v, want ErrUnavailable", err)
	}

	if err := holder.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	holder.send("commit")
	holder.expect("commit ok")
	holder.expect("released")
}
