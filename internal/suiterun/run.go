// Package suiterun holds what the commands that run a SQLite driver's own
// tests through cleolease share, whatever the driver (the base): writing the
// scratch module the rewritten tests run in (its go.mod with replace
// directives, the test files copied through a rewrite, the shim), the go/ast
// helpers of the rewrites, running go test -json there and collecting each
// test's outcome, reading known_failures.txt and comparing the failures
// with it.
//
// It imports no SQLite driver, so that a module which must not link one
// (the ncruces module never links github.com/mattn/go-sqlite3) can use it.
// What is particular to a base — which files, which rewrites, what is left
// out, its known failures — stays in its command (internal/sqlite3suite,
// ncruces/internal/ncrucessuite, modernc/internal/moderncsuite).
package suiterun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// SlowAfter is the duration from which a test's time is reported
// (Result.Slow): a test that is slow through cleolease but not through its
// base shows a stall.
const SlowAfter = 5 * time.Second

// Options says how [Run] runs go test in a scratch module.
type Options struct {
	// Dir is the scratch module's directory; the package run is ".".
	Dir string
	// Tmp is a directory Run creates (it must not exist) and points TMPDIR
	// at, so that the tests' temporary files go into the scratch directory.
	Tmp string
	// Env is added to the go command's environment (after TMPDIR).
	Env []string
	// Race runs the tests with the race detector.
	Race bool
	// Run, if not empty, is go test's -run regexp.
	Run string
	// Skip names top-level tests not to run (go test -skip).
	Skip []string
	// GoFlags are added to go test's flags ("-mod=mod").
	GoFlags []string
}

// Result is what [Run] reports.
type Result struct {
	// Failed holds the failing tests and subtests, by their full names,
	// with their output.
	Failed map[string]string
	// Slow holds the top-level tests that took SlowAfter or more.
	Slow map[string]time.Duration
	// Passed counts the top-level tests (and examples) that passed.
	Passed int
}

// Run runs go test -json in the scratch module o.Dir and returns each
// test's outcome. A test that panics ends the test binary, and so does one
// that calls log.Fatal or os.Exit (reported as started and never ended), so
// the run is repeated, skipping the tests that finished, until none is left:
// the test that ended the binary counts as failed. An error means the
// package did not build, or failed outside any test (a timeout): then no
// per-test verdict can be trusted.
func Run(o Options) (Result, error) {
	res := Result{Failed: map[string]string{}, Slow: map[string]time.Duration{}}
	if err := os.Mkdir(o.Tmp, 0o755); err != nil {
		return res, err
	}
	env := append([]string{"TMPDIR=" + o.Tmp}, o.Env...)
	var finished []string
	for _, s := range o.Skip {
		finished = append(finished, regexp.QuoteMeta(s))
	}
	for {
		args := append([]string{"test", "-json", "-count=1", "-vet=off", "-timeout=10m"}, o.GoFlags...)
		if o.Race {
			args = append(args, "-race")
		}
		if o.Run != "" {
			args = append(args, "-run", o.Run)
		}
		if len(finished) > 0 {
			args = append(args, "-skip", "^("+strings.Join(finished, "|")+")$")
		}
		r, err := runOnce(o.Dir, env, append(args, "."))
		if err != nil {
			return Result{}, err
		}
		res.Passed += r.passed
		maps.Copy(res.Failed, r.failed)
		maps.Copy(res.Slow, r.slow)
		finished = append(finished, r.finished...)
		if r.panicked == "" {
			return res, nil
		}
		finished = append(finished, r.panicked)
	}
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64 // seconds, on pass and fail
}

// runResult is what one go test run reports.
type runResult struct {
	failed   map[string]string        // failing tests and subtests: their output
	finished []string                 // top-level tests that ran to the end, as regexps
	panicked string                   // the top-level test that ended the run, as a regexp
	slow     map[string]time.Duration // top-level tests that took SlowAfter or more
	passed   int                      // top-level tests that passed
}

// runOnce runs the go command with args in dir, env added to its
// environment, and reads its -json output.
func runOnce(dir string, env, args []string) (runResult, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return runResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return runResult{}, err
	}
	r, pkgOutput, pkgFailed, err := readEvents(stdout)
	if err != nil {
		return r, err
	}
	waitErr := cmd.Wait()
	var exit *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exit) {
		return r, waitErr
	}
	if r.panicked == "" && (pkgFailed || waitErr != nil) && len(r.failed) == 0 ||
		strings.Contains(pkgOutput, "test timed out") {
		return r, fmt.Errorf("go test in the scratch module failed outside any test:\n%s%s", pkgOutput, stderr.String())
	}
	return r, nil
}

// readEvents reads the go test -json output of one run from rd: the
// outcomes, the output that belongs to no test, and whether the package
// failed. It finds the test that ended the run, if any.
func readEvents(rd io.Reader) (r runResult, pkgOutput string, pkgFailed bool, err error) {
	r = runResult{failed: map[string]string{}, slow: map[string]time.Duration{}}
	output := map[string]*strings.Builder{}
	running := map[string]bool{} // top-level tests started and not ended
	var pkgOut strings.Builder
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			pkgOut.WriteString(sc.Text() + "\n")
			continue
		}
		if ev.Test == "" {
			pkgOut.WriteString(ev.Output)
			if ev.Action == "fail" || ev.Action == "build-fail" {
				pkgFailed = true
			}
			continue
		}
		b := output[ev.Test]
		if b == nil {
			b = &strings.Builder{}
			output[ev.Test] = b
		}
		b.WriteString(ev.Output)
		top := !strings.Contains(ev.Test, "/")
		switch ev.Action {
		case "run":
			if top {
				running[ev.Test] = true
			}
		case "fail":
			r.failed[ev.Test] = b.String()
			fallthrough
		case "pass", "skip":
			if ev.Action == "pass" && top {
				r.passed++
			}
			if top {
				delete(running, ev.Test)
				r.finished = append(r.finished, regexp.QuoteMeta(ev.Test))
				if d := time.Duration(ev.Elapsed * float64(time.Second)); d >= SlowAfter {
					r.slow[ev.Test] = d
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return r, pkgOut.String(), pkgFailed, err
	}
	pkgOutput = pkgOut.String()
	// A panic is reported as the failure of the running test (and of its
	// parents), followed by the package's failure.
	for name, out := range r.failed {
		if !strings.Contains(name, "/") && strings.Contains(out, "panic:") && pkgFailed {
			r.panicked = regexp.QuoteMeta(name)
			r.finished = slices.DeleteFunc(r.finished, func(n string) bool { return n == r.panicked })
		}
	}
	// A test that ends the binary otherwise (log.Fatal, os.Exit) is
	// reported as started and never ended, then the package's failure. (A
	// parallel test paused when the binary ended is not counted: it ran
	// none of its own code, and the next run runs it.)
	if r.panicked == "" && pkgFailed && !strings.Contains(pkgOutput, "test timed out") {
		for _, name := range slices.Sorted(maps.Keys(running)) {
			if !strings.Contains(output[name].String(), "=== PAUSE") || strings.Contains(output[name].String(), "=== CONT") {
				r.failed[name] = output[name].String() + "(the test binary exited during this test)\n"
				r.panicked = regexp.QuoteMeta(name)
				break
			}
		}
	}
	return r, pkgOutput, pkgFailed, nil
}

// PrintSlow prints to w, by name, the tests of slow (Result.Slow) with
// their durations.
func PrintSlow(w io.Writer, slow map[string]time.Duration) {
	for _, name := range slices.Sorted(maps.Keys(slow)) {
		fmt.Fprintf(w, "slow: %s took %s\n", name, slow[name].Round(time.Second/10))
	}
}

// Compare prints to w the known failures among failed (with their output
// if verbose), the failures known lacks and the listed tests that passed,
// and returns an error when there are any of the last two. A listed test
// that did not fail counts as passed only if judged(test) is true: a test
// that did not run (go test -run, a skipped test or pass) is not judged.
// The caller prints the summary line first.
func Compare(w io.Writer, failed map[string]string, known []KnownFailure, judged func(test string) bool, verbose bool) error {
	return CompareBugs(w, failed, known, nil, judged, verbose)
}

// CompareBugs is [Compare] with bugs: failing tests, by full name, that
// show a cleolease bug rather than a README difference (a bug is not a
// difference to keep, so known_failures.txt does not list them). Each is
// reported as a CLEOLEASE BUG rather than an UNEXPECTED FAILURE, and
// counted among the unexpected failures all the same.
func CompareBugs(w io.Writer, failed map[string]string, known []KnownFailure, bugs []string, judged func(test string) bool, verbose bool) error {
	var unexpected, fixed []string
	listed := map[string]bool{}
	for _, k := range known {
		listed[k.Test] = true
		if _, ok := failed[k.Test]; !ok && judged(k.Test) {
			fixed = append(fixed, k.Test)
		}
	}
	for name := range failed {
		if !listed[name] {
			unexpected = append(unexpected, name)
		}
	}
	sort.Strings(unexpected)
	for _, k := range known {
		if out, ok := failed[k.Test]; ok {
			fmt.Fprintf(w, "  known: %s (%s)\n", k.Test, k.Difference)
			if verbose {
				fmt.Fprint(w, indent(out))
			}
		}
	}
	for _, name := range unexpected {
		what := "UNEXPECTED FAILURE"
		if slices.Contains(bugs, name) {
			what = "CLEOLEASE BUG (leftout.go's bugs)"
		}
		fmt.Fprintf(w, "%s: %s\n%s", what, name, indent(failed[name]))
	}
	for _, name := range fixed {
		fmt.Fprintf(w, "LISTED BUT PASSED: %s: take it off known_failures.txt (and its README mention)\n", name)
	}
	if len(unexpected) > 0 || len(fixed) > 0 {
		return fmt.Errorf("%d unexpected failures, %d listed tests passed", len(unexpected), len(fixed))
	}
	return nil
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
	return b.String()
}

// GoOutput runs the go command in dir and returns its trimmed stdout.
func GoOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Base is the module whose tests a command runs, as the command was
// written for it.
type Base struct {
	// Path is the module's path.
	Path string
	// Version is the version the command's lists were written for.
	Version string
	// Lists names those lists, for the message when another version is
	// required ("leftout.go and known_failures.txt").
	Lists string
	// VersionConst names the command's constant that holds Version.
	VersionConst string
}

// Source returns the directory, in the module cache, of b's module as the
// module in dir requires it (requirer names that module in messages: "the
// main module"). A version other than b.Version is an error: the lists must
// be reviewed first.
func (b Base) Source(dir, requirer string) (string, error) {
	mod, err := GoOutput(dir, "list", "-m", "-f", "{{.Version}} {{.Dir}}", b.Path)
	if err != nil {
		return "", err
	}
	version, srcDir, _ := strings.Cut(mod, " ")
	if srcDir == "" {
		return "", fmt.Errorf("%s %s is not in the module cache: run go mod download", b.Path, version)
	}
	if version != b.Version {
		return "", fmt.Errorf("%s requires %s %s; %s describe %s: review them and update %s", requirer, b.Path, version, b.Lists, b.Version, b.VersionConst)
	}
	return srcDir, nil
}

// Scratch creates the scratch module's directory, a new temporary one
// named after prefix, and fills it with write. With keep it prints its
// path and remove does nothing; otherwise remove removes it (write's error
// removes it too).
func Scratch(prefix string, keep bool, write func(dir string) error) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	if keep {
		fmt.Println("scratch module:", dir)
		remove = func() {}
	}
	if err := write(dir); err != nil {
		remove()
		return "", nil, err
	}
	return dir, remove, nil
}

// Flags are the flags every command takes.
type Flags struct {
	Race    bool   // -race: run the tests with the race detector
	Keep    bool   // -keep: keep the scratch module and print its path
	Verbose bool   // -v: print the output of every failing test
	Run     string // -run: run only the tests matching this regexp
}

// Register defines f's flags on flag.CommandLine, with their defaults.
func (f *Flags) Register() {
	flag.BoolVar(&f.Race, "race", true, "run the tests with the race detector")
	flag.BoolVar(&f.Keep, "keep", false, "keep the scratch module and print its path")
	flag.BoolVar(&f.Verbose, "v", false, "print the output of every failing test, known ones included")
	flag.StringVar(&f.Run, "run", "", "run only the tests matching this regexp (go test -run); the list is then checked only for them")
}

// Exit ends the command: with status 1, err printed after the command's
// name, when err is not nil.
func Exit(command string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, command+":", err)
		os.Exit(1)
	}
}
