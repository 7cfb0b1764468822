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
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cleocode/cleolease/internal/suiterun"
)

// sqlite3Version is the go-sqlite3 version leftout.go and
// known_failures.txt were written for; another version must be reviewed.
const sqlite3Version = "v1.14.53"

// sqlite3Base is go-sqlite3's module as sqlite3Version describes it.
var sqlite3Base = suiterun.Base{
	Path:         sqlite3Path,
	Version:      sqlite3Version,
	Lists:        "leftout.go and known_failures.txt",
	VersionConst: "sqlite3Version",
}

//go:embed known_failures.txt
var knownFailuresText string

func main() {
	var f suiterun.Flags
	f.Register()
	full := flag.Bool("full", false, "also run the slow tests (slowTests in leftout.go)")
	flag.Parse()
	suiterun.Exit("sqlite3suite", mainErr(f, *full))
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
	srcDir, err := sqlite3Base.Source(root, "the main module")
	if err != nil {
		return err
	}
	scratch, remove, err := suiterun.Scratch("cleolease-sqlite3suite-", keep, func(dir string) error {
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
	res, err := suiterun.Run(suiterun.Options{
		Dir:  scratch,
		Tmp:  filepath.Join(scratch, "tmp"),
		Env:  []string{"CGO_ENABLED=1"},
		Race: race,
		Run:  run,
		Skip: skip,
	})
	if err != nil {
		return err
	}
	suiterun.PrintSlow(os.Stdout, res.Slow)
	fmt.Printf("go-sqlite3 %s's tests through cleolease (race %v): %d failed, %d listed in known_failures.txt, %s\n",
		sqlite3Version, race, len(res.Failed), len(known), time.Since(start).Round(time.Second))
	// With -run, listed tests that did not run are not judged; nor are the
	// slow tests without -full.
	judged := func(test string) bool {
		top, _, _ := strings.Cut(test, "/")
		return run == "" && !slices.Contains(skip, top)
	}
	return suiterun.Compare(os.Stdout, res.Failed, known, judged, verbose)
}

// writeScratch fills dir with the scratch module: go.mod and go.sum from the
// main module (so every dependency resolves to the version the main module
// builds with) plus a requirement on cleolease replaced by root, the
// rewritten test files and the shim.
func writeScratch(dir, root, srcDir string) error {
	modPath, err := suiterun.GoOutput(root, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return err
	}
	if err := suiterun.WriteGoMod(dir, root, "sqlite3suite", []string{modPath}, []suiterun.Replace{{Path: modPath, Dir: root}}); err != nil {
		return err
	}
	exported, err := exportedNames(srcDir)
	if err != nil {
		return err
	}
	rewrite := func(name string, src []byte, leaveOut map[string]bool) ([]byte, error) {
		return rewriteFile(name, src, leaveOut, exported)
	}
	if err := suiterun.CopyTests(dir, srcDir, "go-sqlite3", leftOut, rewrite); err != nil {
		return err
	}
	shim, err := suiterun.ShimFile(shimSource, "sqlite3_test", shimHeader)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, suiterun.ShimName), shim, 0o644)
}
