// Command moderncsuite runs modernc.org/sqlite's own tests through
// cleolease's modernc base (driver "cleolease-modernc").
//
// modernc's test files ship in the module cache with the version the modernc
// module requires. They are package sqlite and use unexported names, so
// this command copies them, at test time, into a scratch module in a
// temporary directory (replace directives point it at this checkout) as the
// external package sqlite_test that dot-imports modernc.org/sqlite;
// sql.Open of "sqlite" (or of modernc's driverName) becomes sql.Open of
// "cleolease-modernc", the modernc drivers the tests register with
// sql.Register become cleolease drivers with the modernc driver as
// Config.BaseDriver, modernc's NewConnector becomes a cleolease connector
// over the registered "sqlite" driver, a sql.Conn.Raw callback is handed
// modernc's connection (modernc.Conn's ModerncConn, as the README tells
// applications), and private in-memory DSNs become temporary files, so
// that the tests run through the writer lease (rewrite.go, shim.go). The
// declarations that need modernc's unexported names are left out
// (leftout.go, each with its reason). It then runs go test there (without
// cgo unless -race) and compares the failing tests with known_failures.txt,
// where each known failure names the README difference that explains it.
//
// It exits 1 when a test outside the list fails, when a listed test passes
// (take it off the list: the difference is gone) and when the scratch
// package does not build or its binary dies. Run it from the modernc module:
//
//	go run ./internal/moderncsuite [-race] [-keep] [-v] [-run regexp] [-full]
//
// The repository holds this command and the list, never modernc's code.
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

// baseVersion is the modernc.org/sqlite version leftout.go and
// known_failures.txt were written for; another version must be reviewed.
const baseVersion = "v1.62.0"

// cleoleasePath is the root module's path; the modernc module replaces it
// with the checkout's root.
const cleoleasePath = "github.com/cleocode/cleolease"

//go:embed known_failures.txt
var knownFailuresText string

func main() {
	race := flag.Bool("race", false, "run the tests with the race detector (and cgo, which it needs)")
	keep := flag.Bool("keep", false, "keep the scratch module and print its path")
	verbose := flag.Bool("v", false, "print the output of every failing test, known ones included")
	run := flag.String("run", "", "run only the tests matching this regexp (go test -run); the list is then checked only for them")
	full := flag.Bool("full", false, "also run the slow tests (slowTests in leftout.go)")
	flag.Parse()
	if err := mainErr(*race, *keep, *verbose, *full, *run); err != nil {
		fmt.Fprintln(os.Stderr, "moderncsuite:", err)
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
	mod, err := goOutput(root, "list", "-m", "-f", "{{.Version}} {{.Dir}}", basePath)
	if err != nil {
		return err
	}
	version, srcDir, _ := strings.Cut(mod, " ")
	if srcDir == "" {
		return fmt.Errorf("%s %s is not in the module cache: run go mod download", basePath, version)
	}
	if version != baseVersion {
		return fmt.Errorf("the modernc module requires %s %s; leftout.go and known_failures.txt describe %s: review them and update baseVersion", basePath, version, baseVersion)
	}

	scratch, err := os.MkdirTemp("", "cleolease-moderncsuite-")
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
	for _, b := range bugs {
		fmt.Printf("cleolease bug (-full runs it, and fails): %s: %s\n", b.test, b.report)
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
// modernc module (so every dependency resolves to the version it builds
// with) plus a requirement on it and replacements pointing it and the root
// module at this checkout, the requirements modernc's tests add (from
// modernc's go.mod and go.sum: pprof, fileutil), the rewritten test files,
// the databases they embed, and the shim.
func writeScratch(dir, root, srcDir string) error {
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return err
		}
		if name == "go.sum" {
			base, err := os.ReadFile(filepath.Join(srcDir, name))
			if err != nil {
				return err
			}
			b = append(b, base...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	modPath, err := goOutput(root, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return err
	}
	repo, err := goOutput(root, "list", "-m", "-f", "{{.Dir}}", cleoleasePath)
	if err != nil {
		return err
	}
	edits := []string{"mod", "edit", "-module=moderncsuite", "-require=" + modPath + "@v0.0.0",
		"-replace=" + modPath + "=" + root, "-replace=" + cleoleasePath + "=" + repo}
	extra, err := extraRequires(root, srcDir)
	if err != nil {
		return err
	}
	for _, r := range extra {
		edits = append(edits, "-require="+r)
	}
	if _, err := goOutput(dir, edits...); err != nil {
		return err
	}
	dbs, err := filepath.Glob(filepath.Join(srcDir, "*.db"))
	if err != nil {
		return err
	}
	for _, p := range dbs {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			return err
		}
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
		return fmt.Errorf("leftout.go names %s, which modernc does not ship", f)
	}
	for f := range byFile {
		return fmt.Errorf("leftout.go names declarations in %s, which modernc does not ship", f)
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
// that is slow through cleolease but not through modernc shows a stall.
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
		args := []string{"test", "-json", "-count=1", "-vet=off", "-timeout=10m", "-mod=mod"}
		if race {
			args = append(args, "-race")
		}
		if run != "" {
			args = append(args, "-run", run)
		}
		if len(finished) > 0 {
			args = append(args, "-skip", "^("+strings.Join(finished, "|")+")$")
		}
		r, err := runOnce(dir, tmp, race, append(args, "."))
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
func runOnce(dir, tmp string, race bool, args []string) (runResult, error) {
	r := runResult{failed: map[string]string{}, slow: map[string]time.Duration{}}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cgo := "CGO_ENABLED=0"
	if race {
		cgo = "CGO_ENABLED=1"
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, cgo)
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
	fmt.Fprintf(w, "modernc.org/sqlite %s's tests through cleolease-modernc (race %v): %d failed, %d listed in known_failures.txt, %s\n",
		baseVersion, race, len(failed), len(known), took.Round(time.Second))
	for _, k := range known {
		if out, ok := failed[k.test]; ok {
			fmt.Fprintf(w, "  known: %s (%s)\n", k.test, k.difference)
			if verbose {
				fmt.Fprint(w, indent(out))
			}
		}
	}
	for _, name := range unexpected {
		what := "UNEXPECTED FAILURE"
		for _, b := range bugs {
			if b.test == name {
				what = "CLEOLEASE BUG (leftout.go's bugs)"
			}
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

// extraRequires returns, as path@version, the requirements of modernc's
// go.mod (its tests' dependencies) that the modernc module's go.mod does
// not name.
func extraRequires(root, srcDir string) ([]string, error) {
	type modFile struct {
		Require []struct{ Path, Version string }
	}
	read := func(path string) (modFile, error) {
		var m modFile
		out, err := goOutput(root, "mod", "edit", "-json", path)
		if err != nil {
			return m, err
		}
		return m, json.Unmarshal([]byte(out), &m)
	}
	ours, err := read(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	theirs, err := read(filepath.Join(srcDir, "go.mod"))
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, r := range ours.Require {
		have[r.Path] = true
	}
	var out []string
	for _, r := range theirs.Require {
		if !have[r.Path] {
			out = append(out, r.Path+"@"+r.Version)
		}
	}
	return out, nil
}
