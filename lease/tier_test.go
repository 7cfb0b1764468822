package lease

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/proctest"
)

// The two Linux tiers (the default one and cleolease_portable) cannot see
// each other's liveness evidence, so they refuse to share a database
// (ErrTierConflict): the later one is refused and writes nothing, and a
// SIGKILLed holder of either tier leaves the file to the other, which
// reclaims the lane without waiting out the TTL.

var otherTier struct {
	once sync.Once
	bin  string
	err  error
}

// otherTierBinary builds this package's test binary for the other tier
// (same pollwake choice) once per run.
func otherTierBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("two tiers exist only on Linux")
	}
	otherTier.once.Do(func() {
		dir, err := os.MkdirTemp("", "cleolease-tier")
		if err != nil {
			otherTier.err = err
			return
		}
		var tags []string
		if !platform.Portable {
			tags = append(tags, "cleolease_portable")
		}
		if platform.PollWake {
			tags = append(tags, "cleolease_pollwake")
		}
		otherTier.bin = filepath.Join(dir, "lease-other.test")
		cmd := exec.Command("go", "test", "-c", "-o", otherTier.bin, "-tags", strings.Join(tags, ","), ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			otherTier.err = errors.New(string(out))
		}
	})
	if otherTier.err != nil {
		t.Fatalf("building the other tier's test binary: %v", otherTier.err)
	}
	return otherTier.bin
}

// startOther runs role in a process of the other tier.
func startOther(t *testing.T, role, path string, env ...string) *child {
	t.Helper()
	cmd := proctest.Command(append([]string{"CLEOLEASE_ROLE=" + role, "CLEOLEASE_DB=" + path}, env...)...)
	cmd.Path = otherTierBinary(t)
	cmd.Args[0] = cmd.Path
	return &child{proctest.StartCmd(t, cmd)}
}

func counter(t *testing.T, path string) int {
	t.Helper()
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A process of the other tier is refused while one of this tier holds a
// lane, and writes nothing; once the holder is SIGKILLed, a process of the
// other tier reclaims the lane at once.
func TestTierLaterIsRefusedThenTakesOverAKilledHolder(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	epoch, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
	other := startOther(t, "count", path, "CLEOLEASE_N=200")
	if got := other.expect("ERR"); !strings.Contains(got, ErrTierConflict.Error()) {
		t.Fatalf("other tier: %q, want %v", got, ErrTierConflict)
	}
	other.Cmd.Wait()
	if n := counter(t, path); n != 0 {
		t.Fatalf("a refused process wrote: counter %d", n)
	}
	holder.Cmd.Process.Signal(syscall.SIGKILL)
	holder.Cmd.Wait()
	w := startOther(t, "wait", path, "CLEOLEASE_NAME=other")
	if got := w.expect("granted"); atoiEpoch(got) <= epoch {
		t.Fatalf("other tier granted %s, want above %d", got, epoch)
	}
}

// The same the other way round: this process is the later one.
func TestTierEarlierHolderOfTheOtherTier(t *testing.T) {
	path := newDB(t)
	holder := startOther(t, "hold", path)
	epoch, _ := strconv.ParseInt(holder.expect("held"), 10, 64)
	_, err := Open(context.Background(), Options{Base: testBase, Path: path, DSN: "file:" + path + "?_journal_mode=WAL", TTL: time.Hour})
	if !errors.Is(err, ErrTierConflict) {
		t.Fatalf("Open beside the other tier: %v, want ErrTierConflict", err)
	}
	var le *Error
	if !errors.As(err, &le) || le.Path == "" {
		t.Fatalf("not a *lease.Error naming the file: %v", err)
	}
	holder.Cmd.Process.Signal(syscall.SIGKILL)
	holder.Cmd.Wait()
	e := openEngine(t, path, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := e.Acquire(ctx, "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if h.Epoch() <= epoch {
		t.Fatalf("epoch %d, want above %d", h.Epoch(), epoch)
	}
	if e.Stats().ReclaimDead != 1 {
		t.Fatalf("reclaims %+v", e.Stats())
	}
}

// Processes of one tier on one file, whatever the other tier's binary
// did before: 4 processes of the other tier count exactly, and so do 4 of
// this tier after them (the tier is a property of who is there, not of
// the file).
func TestTierEachCountsExactlyInTurn(t *testing.T) {
	path := newDB(t)
	const procs, n = 4, 200
	for _, start := range []func(t *testing.T, role, path string, env ...string) *child{
		startOther,
		func(t *testing.T, role, path string, env ...string) *child { return startChild(t, role, path, env...) },
	} {
		var kids []*child
		for i := 0; i < procs; i++ {
			kids = append(kids, start(t, "count", path, "CLEOLEASE_N="+strconv.Itoa(n), "CLEOLEASE_LINGER=5ms"))
		}
		for _, c := range kids {
			c.expect("done")
			c.Cmd.Wait()
		}
	}
	if got := counter(t, path); got != 2*procs*n {
		t.Fatalf("counter %d, want %d", got, 2*procs*n)
	}
}

// 4 processes of each tier started at once on one file: each either
// counts all its increments without an error or is refused with
// ErrTierConflict before writing anything, and the counter holds exactly
// the increments of the ones that ran.
func TestTierRaceOfEightProcesses(t *testing.T) {
	path := newDB(t)
	const procs, n = 4, 200
	var kids []*child
	for i := 0; i < procs; i++ {
		env := []string{"CLEOLEASE_N=" + strconv.Itoa(n), "CLEOLEASE_LINGER=5ms"}
		kids = append(kids, startOther(t, "count", path, env...), startChild(t, "count", path, env...))
	}
	done, refused := 0, 0
	for _, c := range kids {
		if !c.Out.Scan() {
			t.Fatal("a child ended without a word")
		}
		switch line := c.Out.Text(); {
		case line == "done":
			done++
		case strings.HasPrefix(line, "ERR") && strings.Contains(line, ErrTierConflict.Error()):
			refused++
		default:
			t.Fatalf("child: %q", line)
		}
		c.Cmd.Wait()
	}
	if got := counter(t, path); got != done*n {
		t.Fatalf("counter %d, want %d (%d ran, %d refused)", got, done*n, done, refused)
	}
	t.Logf("%d processes ran, %d were refused", done, refused)
}
