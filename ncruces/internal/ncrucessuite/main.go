// Command ncrucessuite runs ncruces's own driver tests through
// cleolease-ncruces.
//
// ncruces's driver test files ship in the module cache with the version
// the ncruces module requires. Some are package driver and use unexported
// names, some package driver_test; this command copies them, at test time,
// into a scratch module in a temporary directory (replace directives point
// it at this checkout) as one external package driver_test. sql.Open of
// "sqlite3" becomes sql.Open of "cleolease-ncruces", ncruces's
// driver.Open(dsn, init, term) becomes cleolease-ncruces's Open with the
// same callbacks, and the internal packages the tests import (errutil,
// testcfg) become stand-ins in the scratch module (rewrite.go, shim/). The
// declarations that test ncruces's unexported names are left out
// (leftout.go, each with its reason).
//
// It runs the tests twice: the memdb pass as they are written (their
// databases are memdb ones, which cleolease leases inside the process
// only), and the files pass with every memdb.TestDB database a new file
// (the file lease and cleolease's defaults for files, WAL among them). It
// compares the failing tests with known_failures.txt, where each known
// failure names the README difference that explains it.
//
// It exits 1 when a test outside the list fails, when a listed test passes
// (take it off the list: the difference is gone) and when the scratch
// package does not build or its binary dies. Run it from the ncruces
// module:
//
//	go run ./internal/ncrucessuite [-race=false] [-pass memdb|files] [-keep] [-v] [-run regexp]
//
// The repository holds this command and the list, never ncruces's code.
//
//snippet:nocompile go run
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// ncrucesVersion is the ncruces version leftout.go, shim/ and
// known_failures.txt were written for; another version must be reviewed.
const ncrucesVersion = "v0.37.0"

// passes are the runs of the tests: memdb as ncruces wrote them, files
// with memdb.TestDB's databases as files (shim/shim.go, suiteTestDB).
var passes = []string{"memdb", "files"}

//go:embed known_failures.txt
var knownFailuresText string

func main() {
	race := flag.Bool("race", true, "run the tests with the race detector")
	keep := flag.Bool("keep", false, "keep the scratch module and print its path")
	verbose := flag.Bool("v", false, "print the output of every failing test, known ones included")
	run := flag.String("run", "", "run only the tests matching this regexp (go test -run); the list is then checked only for them")
	pass := flag.String("pass", "", "run only this pass (memdb or files); the list is then checked only for it")
	flag.Parse()
	if err := mainErr(*race, *keep, *verbose, *pass, *run); err != nil {
		fmt.Fprintln(os.Stderr, "ncrucessuite:", err)
		os.Exit(1)
	}
}

func mainErr(race, keep, verbose bool, pass, run string) error {
	start := time.Now()
	known, err := parseKnown(knownFailuresText)
	if err != nil {
		return err
	}
	runPasses := passes
	if pass != "" {
		if !slices.Contains(passes, pass) {
			return fmt.Errorf("-pass %s: want one of %s", pass, strings.Join(passes, ", "))
		}
		runPasses = []string{pass}
	}
	modDir, err := goOutput("", "list", "-m", "-f", "{{.Path}} {{.Dir}}")
	if err != nil {
		return err
	}
	modPath, modDir, _ := strings.Cut(modDir, " ")
	if modPath != ncrucesModule {
		return fmt.Errorf("run it from the ncruces module (%s), not %s", ncrucesModule, modPath)
	}
	root, err := goOutput(modDir, "list", "-m", "-f", "{{with .Replace}}{{.Dir}}{{end}}", rootModule)
	if err != nil {
		return err
	}
	if root == "" {
		return fmt.Errorf("%s is not replaced by a directory in %s/go.mod", rootModule, modDir)
	}
	mod, err := goOutput(modDir, "list", "-m", "-f", "{{.Version}} {{.Dir}}", ncrucesPath)
	if err != nil {
		return err
	}
	version, srcDir, _ := strings.Cut(mod, " ")
	if srcDir == "" {
		return fmt.Errorf("%s %s is not in the module cache: run go mod download", ncrucesPath, version)
	}
	if version != ncrucesVersion {
		return fmt.Errorf("the ncruces module requires %s %s; leftout.go, shim/ and known_failures.txt describe %s: review them and update ncrucesVersion", ncrucesPath, version, ncrucesVersion)
	}

	scratch, err := os.MkdirTemp("", "cleolease-ncrucessuite-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("scratch module:", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	if err := writeScratch(scratch, modDir, root, filepath.Join(srcDir, "driver")); err != nil {
		return err
	}

	failed := map[string]string{}
	slow := map[string]time.Duration{}
	for _, p := range runPasses {
		f, s, passed, err := runTests(scratch, p, race, run)
		if err != nil {
			return fmt.Errorf("%s pass: %w", p, err)
		}
		fmt.Printf("%s pass: %d tests and examples passed, %d failed\n", p, passed, len(f))
		for name, out := range f {
			failed[p+":"+name] = out
		}
		for name, d := range s {
			slow[p+":"+name] = d
		}
	}
	for _, name := range slices.Sorted(maps.Keys(slow)) {
		fmt.Printf("slow: %s took %s\n", name, slow[name].Round(time.Second/10))
	}
	return compare(failed, known, runPasses, run, verbose, time.Since(start), race)
}

const (
	// ncrucesModule is the module this command belongs to and runs in;
	// rootModule is cleolease's, which its go.mod replaces by a directory.
	ncrucesModule = "github.com/cleocode/cleolease/ncruces"
	rootModule    = "github.com/cleocode/cleolease"
)

// writeScratch fills dir with the scratch module: go.mod and go.sum from
// the ncruces module in modDir (so every dependency resolves to the version
// it builds with) plus a requirement on it, both cleolease modules replaced
// by this checkout's directories; the rewritten test files of ncruces's
// driver package (srcDir) and the shim.
func writeScratch(dir, modDir, root, srcDir string) error {
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(modDir, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if _, err := goOutput(dir, "mod", "edit", "-module="+scratchModule,
		"-require="+ncrucesModule+"@v0.0.0", "-replace="+ncrucesModule+"="+modDir,
		"-replace="+rootModule+"="+root); err != nil {
		return err
	}
	byFile, wholeFiles, err := leftOutByFile()
	if err != nil {
		return err
	}
	internals, err := shimInternals()
	if err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(srcDir, "*_test.go"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, path := range names {
		base := filepath.Base(path)
		if wholeFiles[base] {
			delete(wholeFiles, base)
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := rewriteFile(base, src, byFile[base], internals)
		if err != nil {
			return err
		}
		delete(byFile, base)
		if err := os.WriteFile(filepath.Join(dir, base), out, 0o644); err != nil {
			return err
		}
	}
	for f := range wholeFiles {
		return fmt.Errorf("leftout.go names %s, which ncruces's driver does not ship", f)
	}
	for f := range byFile {
		return fmt.Errorf("leftout.go names declarations in %s, which ncruces's driver does not ship", f)
	}
	return writeShim(dir, internals)
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64 // seconds, on pass and fail
}

// slowAfter is the duration from which a test's time is printed: a test
// that is slow through cleolease but not through ncruces shows a stall.
const slowAfter = 5 * time.Second

// runTests runs one pass of go test in the scratch module and returns the
// failing tests (subtests included, by their full names) with their
// output. Its temporary files go into a directory of the pass's in the
// scratch directory. A test that panics ends the test binary, so the run is
// repeated, skipping the tests that finished, until none is left: the
// panicking test counts as failed. An error means the package did not
// build, or failed outside any test (a timeout): then no per-test verdict
// can be trusted. Without the race detector the tests build with cgo off,
// as a program on ncruces does.
func runTests(dir, pass string, race bool, run string) (failed map[string]string, slow map[string]time.Duration, passed int, err error) {
	tmp := filepath.Join(dir, "tmp-"+pass)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, nil, 0, err
	}
	env := []string{"TMPDIR=" + tmp, "CGO_ENABLED=0", "CLEOLEASE_NCRUCESSUITE_FILES=0"}
	if race {
		env[1] = "CGO_ENABLED=1"
	}
	if pass == "files" {
		env[2] = "CLEOLEASE_NCRUCESSUITE_FILES=1"
	}
	failed = map[string]string{}
	slow = map[string]time.Duration{}
	var finished []string
	for {
		args := []string{"test", "-json", "-count=1", "-vet=off", "-timeout=10m"}
		if race {
			args = append(args, "-race")
		}
		if run != "" {
			args = append(args, "-run", run)
		}
		if len(finished) > 0 {
			args = append(args, "-skip", "^("+strings.Join(finished, "|")+")$")
		}
		r, err := runOnce(dir, env, append(args, "."))
		if err != nil {
			return nil, nil, 0, err
		}
		passed += r.passed
		for name, out := range r.failed {
			failed[name] = out
		}
		for name, d := range r.slow {
			slow[name] = d
		}
		finished = append(finished, r.finished...)
		if r.panicked == "" {
			return failed, slow, passed, nil
		}
		finished = append(finished, r.panicked)
	}
}

// runResult is what one go test run reports.
type runResult struct {
	failed   map[string]string        // failing tests and subtests: their output
	finished []string                 // top-level tests that ran to the end
	panicked string                   // the top-level test whose panic ended the run
	slow     map[string]time.Duration // top-level tests that took slowAfter or more
	passed   int                      // top-level tests that passed
}

// runOnce runs the go command with args in dir, env added to its
// environment, and reads its -json output.
func runOnce(dir string, env, args []string) (runResult, error) {
	r := runResult{failed: map[string]string{}, slow: map[string]time.Duration{}}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	output := map[string]*strings.Builder{}
	running := map[string]bool{} // top-level tests started and not ended
	var pkgOutput strings.Builder
	pkgFailed := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			pkgOutput.WriteString(sc.Text() + "\n")
			continue
		}
		if ev.Test == "" {
			pkgOutput.WriteString(ev.Output)
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
		switch ev.Action {
		case "run":
			if !strings.Contains(ev.Test, "/") {
				running[ev.Test] = true
			}
		case "fail":
			r.failed[ev.Test] = b.String()
			fallthrough
		case "pass", "skip":
			if ev.Action == "pass" && !strings.Contains(ev.Test, "/") {
				r.passed++
			}
			if !strings.Contains(ev.Test, "/") {
				delete(running, ev.Test)
				r.finished = append(r.finished, regexp.QuoteMeta(ev.Test))
				if d := time.Duration(ev.Elapsed * float64(time.Second)); d >= slowAfter {
					r.slow[ev.Test] = d
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	waitErr := cmd.Wait()
	var exit *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exit) {
		return r, waitErr
	}
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
	if r.panicked == "" && pkgFailed && !strings.Contains(pkgOutput.String(), "test timed out") {
		for _, name := range slices.Sorted(maps.Keys(running)) {
			if !strings.Contains(output[name].String(), "=== PAUSE") || strings.Contains(output[name].String(), "=== CONT") {
				r.failed[name] = output[name].String() + "(the test binary exited during this test)\n"
				r.panicked = regexp.QuoteMeta(name)
				break
			}
		}
	}
	if r.panicked == "" && (pkgFailed || waitErr != nil) && len(r.failed) == 0 ||
		strings.Contains(pkgOutput.String(), "test timed out") {
		return r, fmt.Errorf("go test in the scratch module failed outside any test:\n%s%s", pkgOutput.String(), stderr.String())
	}
	return r, nil
}

// compare prints the verdict and returns an error when the failures differ
// from the list: a test failed that is not on it, or a listed test passed.
// Failures are named pass:Test. With -run, listed tests that did not run
// are not judged; nor are those of a pass that did not run (-pass).
func compare(failed map[string]string, known []knownFailure, ran []string, run string, verbose bool, took time.Duration, race bool) error {
	var unexpected, fixed []string
	listed := map[string]bool{}
	for _, k := range known {
		listed[k.test] = true
		pass, _, _ := strings.Cut(k.test, ":")
		if _, ok := failed[k.test]; !ok && run == "" && slices.Contains(ran, pass) {
			fixed = append(fixed, k.test)
		}
	}
	for name := range failed {
		if !listed[name] {
			unexpected = append(unexpected, name)
		}
	}
	sort.Strings(unexpected)
	var w io.Writer = os.Stdout
	fmt.Fprintf(w, "ncruces %s's driver tests through cleolease-ncruces (passes %s, race %v): %d failed, %d listed in known_failures.txt, %s\n",
		ncrucesVersion, strings.Join(ran, " and "), race, len(failed), len(known), took.Round(time.Second))
	for _, k := range known {
		if out, ok := failed[k.test]; ok {
			fmt.Fprintf(w, "  known: %s (%s)\n", k.test, k.difference)
			if verbose {
				fmt.Fprint(w, indent(out))
			}
		}
	}
	for _, name := range unexpected {
		fmt.Fprintf(w, "UNEXPECTED FAILURE: %s\n%s", name, indent(failed[name]))
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

// goOutput runs the go command in dir and returns its trimmed stdout.
func goOutput(dir string, args ...string) (string, error) {
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
