//go:build unix

package chaos

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The ledger's writers may run on different bases at once (issue 30):
// -chaos.bases=go-sqlite3,modernc,ncruces gives writer i the base
// i mod 3. A go-sqlite3 writer is this test binary in the role "writer";
// a modernc or ncruces writer is the program internal/chaosworker of that
// base's module (one binary cannot link go-sqlite3 and a cgo-free base),
// built once per run with plain go build (no C compiler needed).
var flagBases = flag.String("chaos.bases", "", "comma-separated bases of the writers, given in turn: go-sqlite3, modernc, ncruces (default go-sqlite3, or $CLEOLEASE_CHAOS_BASES)")

// base is one base a writer can run on.
type base struct {
	name string // go-sqlite3, modernc, ncruces
	bin  string // the writer program; "" for this test binary
}

const baseGoSQLite3 = "go-sqlite3"

var goSQLite3 = base{name: baseGoSQLite3}

// command returns the command that starts a writer on the base.
func (b base) command() *exec.Cmd {
	if b.bin == "" {
		return exec.Command(os.Args[0], "-test.run=^$")
	}
	return exec.Command(b.bin)
}

// baseSet is the bases of a run's writers, in turn.
type baseSet []base

// of returns writer i's base.
func (s baseSet) of(i int) base { return s[i%len(s)] }

func (s baseSet) String() string {
	names := make([]string, len(s))
	for i, b := range s {
		names[i] = b.name
	}
	return strings.Join(names, ",")
}

// chaosBases reads -chaos.bases (or $CLEOLEASE_CHAOS_BASES) and builds
// the writer program of each cgo-free base named into dir.
func chaosBases(dir string) (baseSet, error) {
	spec := *flagBases
	if spec == "" {
		spec = os.Getenv("CLEOLEASE_CHAOS_BASES")
	}
	if spec == "" {
		return baseSet{goSQLite3}, nil
	}
	var set baseSet
	built := map[string]string{}
	for _, name := range strings.Split(spec, ",") {
		switch name = strings.TrimSpace(name); name {
		case baseGoSQLite3:
			set = append(set, goSQLite3)
		case "modernc", "ncruces":
			if built[name] == "" {
				bin, err := buildWorker(name, dir)
				if err != nil {
					return nil, err
				}
				built[name] = bin
			}
			set = append(set, base{name: name, bin: built[name]})
		default:
			return nil, fmt.Errorf("-chaos.bases: unknown base %q (go-sqlite3, modernc, ncruces)", name)
		}
	}
	return set, nil
}

// buildWorker builds module's internal/chaosworker (module is a nested
// module's directory beside this package's) into dir.
func buildWorker(module, dir string) (string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("locating the module: %v", err)
	}
	bin := filepath.Join(dir, module+"-writer")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/chaosworker")
	cmd.Dir = filepath.Join(strings.TrimSpace(string(root)), module)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the %s writer: %v\n%s", module, err, out)
	}
	return bin, nil
}

// ledgerDSN is the DSN of the ledger file path in phase ph, in base b's
// dialect: the lane, mode require, the phase's parameters and its journal
// mode.
func ledgerDSN(path string, ph phase, b base) string {
	dsn := "file:" + path + "?_lease_mode=require&_lease_scope=" + ledgerScope + "&_lease_lane=" + ledgerLane + "&" + ph.params
	if ph.journal == "" {
		return dsn
	}
	if b.name == baseGoSQLite3 {
		return dsn + "&_journal_mode=" + ph.journal
	}
	return dsn + "&_pragma=journal_mode(" + ph.journal + ")"
}
