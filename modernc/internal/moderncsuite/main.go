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
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cleocode/cleolease/internal/suiterun"
)

// baseVersion is the modernc.org/sqlite version leftout.go and
// known_failures.txt were written for; another version must be reviewed.
const baseVersion = "v1.62.0"

// moderncBase is modernc's module as baseVersion describes it.
var moderncBase = suiterun.Base{
	Path:         basePath,
	Version:      baseVersion,
	Lists:        "leftout.go and known_failures.txt",
	VersionConst: "baseVersion",
}

// cleoleasePath is the root module's path; the modernc module replaces it
// with the checkout's root.
const cleoleasePath = "github.com/cleocode/cleolease"

//go:embed known_failures.txt
var knownFailuresText string

func main() {
	var f suiterun.Flags
	f.Register()
	// Without the race detector the tests build with cgo off, as a program
	// on modernc does; the race detector needs cgo, so it is off by default.
	race := flag.Lookup("race")
	race.DefValue, race.Usage, f.Race = "false", "run the tests with the race detector (and cgo, which it needs)", false
	full := flag.Bool("full", false, "also run the slow tests (slowTests in leftout.go)")
	flag.Parse()
	suiterun.Exit("moderncsuite", mainErr(f, *full))
}

func mainErr(f suiterun.Flags, full bool) error {
	race, keep, verbose, run := f.Race, f.Keep, f.Verbose, f.Run
	start := time.Now()
	known, err := suiterun.ParseKnown(knownFailuresText, nil)
	if err != nil {
		return err
	}
	root, err := suiterun.GoOutput("", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return err
	}
	srcDir, err := moderncBase.Source(root, "the modernc module")
	if err != nil {
		return err
	}
	scratch, remove, err := suiterun.Scratch("cleolease-moderncsuite-", keep, func(dir string) error {
		return writeScratch(dir, root, srcDir)
	})
	if err != nil {
		return err
	}
	defer remove()

	var skip []string
	if !full {
		for _, s := range slowTests {
			fmt.Printf("not run (slow; -full runs it): %s: %s\n", s.test, s.reason)
			skip = append(skip, s.test)
		}
	}
	var bugTests []string
	for _, b := range bugs {
		fmt.Printf("cleolease bug (-full runs it, and fails): %s: %s\n", b.test, b.report)
		bugTests = append(bugTests, b.test)
	}
	cgo := "CGO_ENABLED=0"
	if race {
		cgo = "CGO_ENABLED=1"
	}
	res, err := suiterun.Run(suiterun.Options{
		Dir:     scratch,
		Tmp:     filepath.Join(scratch, "tmp"),
		Env:     []string{cgo},
		Race:    race,
		Run:     run,
		Skip:    skip,
		GoFlags: []string{"-mod=mod"},
	})
	if err != nil {
		return err
	}
	suiterun.PrintSlow(os.Stdout, res.Slow)
	fmt.Printf("modernc.org/sqlite %s's tests through cleolease-modernc (race %v): %d failed, %d listed in known_failures.txt, %s\n",
		baseVersion, race, len(res.Failed), len(known), time.Since(start).Round(time.Second))
	// With -run, listed tests that did not run are not judged; nor are the
	// slow tests without -full.
	judged := func(test string) bool {
		top, _, _ := strings.Cut(test, "/")
		return run == "" && !slices.Contains(skip, top)
	}
	return suiterun.CompareBugs(os.Stdout, res.Failed, known, bugTests, judged, verbose)
}

// writeScratch fills dir with the scratch module: go.mod and go.sum from the
// modernc module (so every dependency resolves to the version it builds
// with) plus a requirement on it and replacements pointing it and the root
// module at this checkout, the requirements modernc's tests add (from
// modernc's go.mod and go.sum: pprof, fileutil), the rewritten test files,
// the databases they embed, and the shim.
func writeScratch(dir, root, srcDir string) error {
	modPath, err := suiterun.GoOutput(root, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return err
	}
	repo, err := suiterun.GoOutput(root, "list", "-m", "-f", "{{.Dir}}", cleoleasePath)
	if err != nil {
		return err
	}
	if err := suiterun.WriteGoMod(dir, root, "moderncsuite", []string{modPath},
		[]suiterun.Replace{{Path: modPath, Dir: root}, {Path: cleoleasePath, Dir: repo}}); err != nil {
		return err
	}
	extra, err := extraRequires(root, srcDir)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		edits := []string{"mod", "edit"}
		for _, r := range extra {
			edits = append(edits, "-require="+r)
		}
		if _, err := suiterun.GoOutput(dir, edits...); err != nil {
			return err
		}
	}
	if err := appendFile(filepath.Join(dir, "go.sum"), filepath.Join(srcDir, "go.sum")); err != nil {
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
	exported, err := exportedNames(srcDir)
	if err != nil {
		return err
	}
	rewrite := func(name string, src []byte, leaveOut map[string]bool) ([]byte, error) {
		return rewriteFile(name, src, leaveOut, exported)
	}
	if err := suiterun.CopyTests(dir, srcDir, "modernc", leftOut, rewrite); err != nil {
		return err
	}
	shim, err := suiterun.ShimFile(shimSource, "sqlite_test", shimHeader)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, suiterun.ShimName), shim, 0o644)
}

// appendFile appends the file from to the file to.
func appendFile(to, from string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(to, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
		out, err := suiterun.GoOutput(root, "mod", "edit", "-json", path)
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
