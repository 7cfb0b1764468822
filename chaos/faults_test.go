//go:build unix

package chaos

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/lease"
)

var (
	flagFaults    = flag.String("chaos.faults", "", "comma-separated faults to inject (default all, or $CLEOLEASE_CHAOS_FAULTS): "+strings.Join(allFaults, ","))
	flagIdleBound = flag.Duration("chaos.idlebound", lease.IdleBound, "the longest a live writer may wait while no process holds the lane (the engine's promise, lease.IdleBound)")
	flagWaitBound = flag.Duration("chaos.waitbound", time.Second, "the longest one operation may wait live while no stopped process blocks the lane")
)

// allFaults are the faults the ledger can inject. All but giveup are the
// nemesis' (nemesisFaults); giveup is the writers' own.
var allFaults = []string{"kill", "stop", "break", "giveup", "sidecar", "flood"}

// nemesisFaults are the nemesis' actions, the fault each belongs to, and
// their odds: each round picks one of the enabled ones with probability
// proportional to its weight.
var nemesisFaults = []struct {
	action, fault string
	weight        int
}{
	{"kill", "kill", 15},
	{"stop", "stop", 30},
	{"break-api", "break", 20},
	{"break-engine", "break", 10},
	{"sidecar", "sidecar", 7},
	{"flood", "flood", 18},
}

// faultSet is the set of enabled faults.
type faultSet map[string]bool

// chaosFaults reads -chaos.faults (or $CLEOLEASE_CHAOS_FAULTS); empty
// means every fault.
func chaosFaults() (faultSet, error) {
	s := *flagFaults
	if s == "" {
		s = os.Getenv("CLEOLEASE_CHAOS_FAULTS")
	}
	fs := faultSet{}
	if s == "" || s == "all" {
		for _, f := range allFaults {
			fs[f] = true
		}
		return fs, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		known := false
		for _, g := range allFaults {
			known = known || f == g
		}
		if !known {
			return nil, fmt.Errorf("unknown fault %q (known: %s)", f, strings.Join(allFaults, ","))
		}
		fs[f] = true
	}
	return fs, nil
}

func (fs faultSet) String() string {
	var on []string
	for _, f := range allFaults {
		if fs[f] {
			on = append(on, f)
		}
	}
	return strings.Join(on, ",")
}

// pickAction picks the nemesis' next action among the enabled faults' ("",
// when none is enabled: the nemesis then only waits).
func (fs faultSet) pickAction(rng *rand.Rand) string {
	total := 0
	for _, a := range nemesisFaults {
		if fs[a.fault] {
			total += a.weight
		}
	}
	if total == 0 {
		return ""
	}
	k := rng.IntN(total)
	for _, a := range nemesisFaults {
		if !fs[a.fault] {
			continue
		}
		if k < a.weight {
			return a.action
		}
		k -= a.weight
	}
	return ""
}

// ---------------------------------------------------------------------------
// The sidecar deleted.

// removeSidecar deletes the liveness files while the writers run — the
// sidecar <db>-cleolease of the default Linux tier, and the portable
// tier's directory <db>-cleolease.d (build tag cleolease_portable) — and
// then restarts a writer (SIGKILL, start), which opens on a new sidecar
// while the others keep the old one.
func (r *ledgerRun) removeSidecar(rng *rand.Rand) {
	at := now()
	var gone []string
	switch err := os.Remove(platform.SidecarPath(r.path)); {
	case err == nil:
		gone = append(gone, "-cleolease")
	case !errors.Is(err, fs.ErrNotExist):
		r.oddity("remove the sidecar: %v", err)
	}
	dir := r.path + "-cleolease.d"
	if _, err := os.Lstat(dir); err == nil {
		// As a cleaner's rm -rf does, retry while live processes create
		// files in the directory between the walk and the final rmdir.
		err := os.RemoveAll(dir)
		for i := 0; i < 20 && errors.Is(err, syscall.ENOTEMPTY); i++ {
			err = os.RemoveAll(dir)
		}
		if err != nil {
			r.oddity("remove the sidecar directory: %v", err)
		} else {
			gone = append(gone, "-cleolease.d")
		}
	}
	kind := "sidecar"
	if len(gone) == 0 {
		kind = "sidecar:absent"
	}
	p := r.procs[rng.IntN(len(r.procs))]
	old := p.pid()
	if err := p.kill(); err != nil {
		r.oddity("sidecar: restart writer %d: %v", p.idx, err)
		return
	}
	r.note(at, kind, fmt.Sprintf("removed %v; restarted w%d (pid %d → %d)", gone, p.idx, old, p.pid()))
}

// ---------------------------------------------------------------------------
// A datagram socket flooded.

// The flooder's environment.
const (
	envTargets  = "CLEOLEASE_CHAOS_TARGETS"   // holder ids to flood, comma-separated
	envPids     = "CLEOLEASE_CHAOS_PIDS"      // live writer pids, for registrations that name them
	envFloodFor = "CLEOLEASE_CHAOS_FLOOD_FOR" // how long to flood (a Go duration)
)

func init() { roles["flooder"] = flooderMain }

// flood floods the doorbell of a writer (waiting or holding) and, half the
// time, of the lane's current holder as the monitor last read it, from a
// separate "flooder" process, for 20–250 ms. It does not wait for the
// flooder: wg does.
func (r *ledgerRun) flood(rng *rand.Rand, wg *sync.WaitGroup) {
	var targets, names, pids []string
	p := r.procs[rng.IntN(len(r.procs))]
	if id := p.holderID(); id != "" {
		targets, names = append(targets, id), append(names, fmt.Sprintf("w%d", p.idx))
	}
	if id := r.mon.holderID(); id != "" && rng.IntN(2) == 0 {
		targets, names = append(targets, id), append(names, "the row's holder "+r.whoHolder(id))
	}
	if len(targets) == 0 {
		r.note(now(), "flood:notarget", "")
		return
	}
	for _, q := range r.procs {
		pids = append(pids, strconv.Itoa(q.pid()))
	}
	d := 20*time.Millisecond + time.Duration(rng.Int64N(int64(230*time.Millisecond)))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=flooder", envPath+"="+r.path,
		envTargets+"="+strings.Join(targets, ","), envPids+"="+strings.Join(pids, ","),
		envFloodFor+"="+d.String(), envSeed+"="+strconv.FormatUint(rng.Uint64(), 10))
	at := now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, err := cmd.Output()
		line := strings.TrimSpace(string(out))
		var sent, full, failed int
		switch {
		case err != nil:
			r.oddity("flooder process: %v (%s)", err, line)
		case strings.HasPrefix(line, "F nobell"):
			// The portable tier's sockets live in the sidecar directory,
			// which the sidecar fault may have removed.
			r.note(at, "flood:nobell", line)
		default:
			if _, err := fmt.Sscanf(line, "F %d %d %d", &sent, &full, &failed); err != nil {
				r.oddity("flooder process: %q", line)
				return
			}
			r.note(at, "flood", fmt.Sprintf("%s for %s: %d datagrams sent, %d refused (queue full), %d failed",
				strings.Join(names, " and "), d.Round(time.Millisecond), sent, full, failed))
			r.count("flood-datagrams", sent)
			r.count("flood-refused-full", full)
		}
	}()
}

// flooderMain sends junk and valid-looking datagrams (registrations,
// grants, requests to look, status queries, the first versions' JSON) to
// the doorbells of the holder ids in $CLEOLEASE_CHAOS_TARGETS for
// $CLEOLEASE_CHAOS_FLOOD_FOR, as fast as their queues take them, from a
// doorbell of its own (platform.ListenBell: the abstract socket of the
// default Linux tier, a socket file in the portable tier). It reports
// "F <sent> <refused as full> <failed>" on stdout, or "F nobell <error>".
func flooderMain() int {
	path := os.Getenv(envPath)
	targets := strings.Split(os.Getenv(envTargets), ",")
	var pids []int64
	for _, s := range strings.Split(os.Getenv(envPids), ",") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			pids = append(pids, n)
		}
	}
	d, _ := time.ParseDuration(os.Getenv(envFloodFor))
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 0xf100d))
	fi, err := platform.Stat(path)
	if err != nil {
		fmt.Printf("F nobell %q\n", err.Error())
		return 0
	}
	id := fmt.Sprintf("cl-flood-%016x", rng.Uint64())
	bell, err := platform.ListenBell(path, id, fi.ID)
	if err != nil {
		fmt.Printf("F nobell %q\n", err.Error())
		return 0
	}
	defer bell.Close()
	var sent, full, failed int
	for end := time.Now().Add(d); time.Now().Before(end); {
		msg := floodDatagram(rng, id, pids, bell.MaxDatagram())
		switch err := bell.Send(targets[rng.IntN(len(targets))], msg); {
		case err == nil:
			sent++
		case errors.Is(err, platform.ErrFull):
			full++
			time.Sleep(100 * time.Microsecond) // pacing: the queue is full
		default:
			failed++ // the target is gone (killed, restarted)
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Printf("F %d %d %d\n", sent, full, failed)
	return 0
}

// floodDatagram returns one datagram of the flood: junk, a known kind
// with a malformed body, or a well-formed registration, grant, request to
// look, status query or JSON registration of the ledger's lane (see
// lease/wire.go and lease/doorbell.go; the format is restated here, as a
// stranger on the socket would have to). Registrations name fake holder
// ids, with random or real writers' pids.
func floodDatagram(rng *rand.Rand, self string, pids []int64, maxLen int) []byte {
	const version = 1
	str := func(b []byte, s string) []byte {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	fakeReg := func() []any {
		pid := int64(rng.IntN(1 << 22))
		if len(pids) > 0 && rng.IntN(2) == 0 {
			pid = pids[rng.IntN(len(pids))]
		}
		return []any{ledgerScope, ledgerLane, fmt.Sprintf("cl-fake-%08x", rng.Uint32()), "",
			pid, int64(1<<20 + rng.Int64N(1<<40)), int64(rng.IntN(200)), rng.Int64N(1 << 30),
			int64(300), time.Now().UnixMilli() - rng.Int64N(5000)}
	}
	regs := func(b []byte, n int) []byte {
		b = binary.AppendUvarint(b, uint64(n))
		for range n {
			f := fakeReg()
			for _, v := range f[:4] {
				b = str(b, v.(string))
			}
			for _, v := range f[4:] {
				b = binary.AppendVarint(b, v.(int64))
			}
			b = append(b, byte(rng.IntN(2)))
		}
		return b
	}
	junk := func(b []byte, n int) []byte {
		for range n {
			b = append(b, byte(rng.IntN(256)))
		}
		return b
	}
	var b []byte
	switch rng.IntN(9) {
	case 0: // junk
		b = junk(nil, 1+rng.IntN(min(maxLen, 1500)))
	case 1: // a known kind, a malformed body
		b = junk([]byte{"gwlqrGW"[rng.IntN(7)], version}, rng.IntN(64))
	case 2, 3: // waiting: registrations of fake waiters
		b = regs([]byte{'w', version}, 1+rng.IntN(3))
	case 4: // a forged grant of the lane
		b = regs(str(str([]byte{'g', version}, ledgerScope), ledgerLane), rng.IntN(3))
	case 5: // look at the lane again
		b = str(str([]byte{'l', version}, ledgerScope), ledgerLane)
	case 6: // a plain ring
		b = []byte{'G'}
	case 7: // who waits? (answered to the flooder, which never reads)
		b = str(str(str([]byte{'q', version}, self), ledgerScope), ledgerLane)
	default: // the first versions' JSON registration
		f := fakeReg()
		j, _ := json.Marshal(map[string]any{"Scope": f[0], "Lane": f[1], "ID": f[2], "PID": f[4], "Slot": f[5],
			"Priority": f[6], "Arrival": f[7], "TTL": f[8], "Enqueued": f[9]})
		b = append([]byte{'W'}, j...)
	}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	return b
}
