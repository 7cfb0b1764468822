// Command sqlite3suite runs go-sqlite3's own tests through cleolease.
//
// go-sqlite3's test files ship in the module cache with the version the main
// module requires. They are package sqlite3 and use unexported names, so
// this command copies them, at test time, into a scratch module in a
// temporary directory (a replace directive points it at this checkout) as the
// external package sqlite3_test that dot-imports go-sqlite3; sql.Open of
// "sqlite3" becomes sql.Open of "cleolease", the drivers the tests register
// with sql.Register become cleolease drivers with the go-sqlite3 driver as
// Config.BaseDriver, and private in-memory DSNs become temporary files
// (rewrite.go, shim.go). The declarations that need go-sqlite3's unexported
// names are left out (leftout.go, each with its reason). It then runs go
// test there and compares the failing tests with known_failures.txt, where
// each known failure names the README difference that explains it.
//
// It exits 1 when a test outside the list fails, when a listed test passes
// (take it off the list: the difference is gone) and when the scratch
// package does not build or its binary dies. Run it from the repository:
//
//	go run ./internal/sqlite3suite [-race=false] [-keep] [-v] [-run regexp]
//
// The repository holds this command and the list, never go-sqlite3's code.
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

// sqlite3Version is the go-sqlite3 version leftout.go and
// known_failures.txt were written for; another version must be reviewed.
const sqlite3Version = "v1.14.53"

//go:embed known_failures.txt
var knownFailuresText string

func main() {
	race := flag.Bool("race", true, "run the tests with the race detector")
	keep := flag.Bool("keep", false, "keep the scratch module and print its path")
	verbose := flag.Bool("v", false, "print the output of every failing test, known ones included")
	run := flag.String("run", "", "run only the tests matching this regexp (go test -run); the list is then checked only for them")
	full := flag.Bool("full", false, "also run the slow tests (slowTests in leftout.go)")
	flag.Parse()
	if err := mainErr(*race, *keep, *verbose, *full, *run); err != nil {
		fmt.Fprintln(os.Stderr, "sqlite3suite:", err)
		os.Exit(1)
	}
}

func mainErr(race, keep, verbose, full bool, run string) error {
	start := time.Now()
	known, err := parseKnown(knownFailuresText)
	if err != nil {
		return err
	}
	root, err := goOutput("", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return err
	}
	mod, err := goOutput(root, "list", "-m", "-f", "{{.Version}} {{.Dir}}", sqlite3Path)
	if err != nil {
		return err
	}
	version, srcDir, _ := strings.Cut(mod, " ")
	if srcDir == "" {
		return fmt.Errorf("%s %s is not in the module cache: run go mod download", sqlite3Path, version)
	}
	if version != sqlite3Version {
		return fmt.Errorf("the main module requires %s %s; leftout.go and known_failures.txt describe %s: review them and update sqlite3Version", sqlite3Path, version, sqlite3Version)
	}

	scratch, err := os.MkdirTemp("", "cleolease-sqlite3suite-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("scratch module:", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	if err := writeScratch(scratch, root, srcDir); err != nil {
		return err
	}

	var skip []string
	if !full {
		for _, s := range slowTests {
			fmt.Printf("not run (slow; -full runs it): %s: %s\n", s.test, s.reason)
			skip = append(skip, regexp.QuoteMeta(s.test))
		}
	}
	failed, slow, err := runTests(scratch, race, run, skip)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(slow)) {
		fmt.Printf("slow: %s took %s\n", name, slow[name].Round(time.Second/10))
	}
	return compare(failed, known, run, skip, verbose, time.Since(start), race)
}

// writeScratch fills dir with the scratch module: go.mod and go.sum from the
// main module (so every dependency resolves to the version the main module
// builds with) plus a requirement on cleolease replaced by root, the
// rewritten test files and the shim.
func writeScratch(dir, root, srcDir string) error {
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	modPath, err := goOutput(root, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return err
	}
	if _, err := goOutput(dir, "mod", "edit", "-module=sqlite3suite", "-require="+modPath+"@v0.0.0", "-replace="+modPath+"="+root); err != nil {
		return err
	}
	byFile, wholeFiles, err := leftOutByFile()
	if err != nil {
		return err
	}
	exported, err := exportedNames(srcDir)
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
		out, err := rewriteFile(base, src, byFile[base], exported)
		if err != nil {
			return err
		}
		delete(byFile, base)
		if err := os.WriteFile(filepath.Join(dir, base), out, 0o644); err != nil {
			return err
		}
	}
	for f := range wholeFiles {
		return fmt.Errorf("leftout.go names %s, which go-sqlite3 does not ship", f)
	}
	for f := range byFile {
		return fmt.Errorf("leftout.go names declarations in %s, which go-sqlite3 does not ship", f)
	}
	shim, err := shimFile()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, shimName), shim, 0o644)
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64 // seconds, on pass and fail
}

// slowAfter is the duration from which a test's time is printed: a test
// that is slow through cleolease but not through go-sqlite3 shows a stall.
const slowAfter = 5 * time.Second

// runTests runs go test in the scratch module and returns the failing
// tests (subtests included, by their full names) with their output. Its
// temporary files go into the scratch directory. A test that panics ends
// the test binary, so the run is repeated, skipping the tests that
// finished, until none is left: the panicking test counts as failed. An
// error means the package did not build, or failed outside any test (a
// timeout): then no per-test verdict can be trusted.
func runTests(dir string, race bool, run string, skip []string) (failed map[string]string, slow map[string]time.Duration, err error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, nil, err
	}
	failed = map[string]string{}
	slow = map[string]time.Duration{}
	finished := slices.Clone(skip)
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
		r, err := runOnce(dir, tmp, append(args, "."))
		if err != nil {
			return nil, nil, err
		}
		for name, out := range r.failed {
			failed[name] = out
		}
		for name, d := range r.slow {
			slow[name] = d
		}
		finished = append(finished, r.finished...)
		if r.panicked == "" {
			return failed, slow, nil
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
}

// runOnce runs the go command with args in dir and reads its -json output.
func runOnce(dir, tmp string, args []string) (runResult, error) {
	r := runResult{failed: map[string]string{}, slow: map[string]time.Duration{}}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CGO_ENABLED=1")
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
		case "fail":
			r.failed[ev.Test] = b.String()
			fallthrough
		case "pass", "skip":
			if !strings.Contains(ev.Test, "/") {
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
	if r.panicked == "" && (pkgFailed || waitErr != nil) && len(r.failed) == 0 ||
		strings.Contains(pkgOutput.String(), "test timed out") {
		return r, fmt.Errorf("go test in the scratch module failed outside any test:\n%s%s", pkgOutput.String(), stderr.String())
	}
	return r, nil
}

// compare prints the verdict and returns an error when the failures differ
// from the list: a test failed that is not on it, or a listed test passed.
// With -run, listed tests that did not run are not judged; nor are the slow
// tests without -full.
func compare(failed map[string]string, known []knownFailure, run string, skip []string, verbose bool, took time.Duration, race bool) error {
	var unexpected, fixed []string
	listed := map[string]bool{}
	for _, k := range known {
		listed[k.test] = true
		top, _, _ := strings.Cut(k.test, "/")
		if _, ok := failed[k.test]; !ok && run == "" && !slices.Contains(skip, regexp.QuoteMeta(top)) {
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
	fmt.Fprintf(w, "go-sqlite3 %s's tests through cleolease (race %v): %d failed, %d listed in known_failures.txt, %s\n",
		sqlite3Version, race, len(failed), len(known), took.Round(time.Second))
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
