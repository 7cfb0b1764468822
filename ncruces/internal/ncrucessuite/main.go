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

// ncrucesVersion is the ncruces version leftout.go, shim/ and
// known_failures.txt were written for; another version must be reviewed.
const ncrucesVersion = "v0.37.0"

// ncrucesBase is ncruces's module as ncrucesVersion describes it.
var ncrucesBase = suiterun.Base{
	Path:         ncrucesPath,
	Version:      ncrucesVersion,
	Lists:        "leftout.go, shim/ and known_failures.txt",
	VersionConst: "ncrucesVersion",
}

// passes are the runs of the tests: memdb as ncruces wrote them, files
// with memdb.TestDB's databases as files (shim/shim.go, suiteTestDB).
var passes = []string{"memdb", "files"}

//go:embed known_failures.txt
var knownFailuresText string

func main() {
	var f suiterun.Flags
	f.Register()
	pass := flag.String("pass", "", "run only this pass (memdb or files); the list is then checked only for it")
	flag.Parse()
	suiterun.Exit("ncrucessuite", mainErr(f, *pass))
}

func mainErr(f suiterun.Flags, pass string) error {
	race, keep, verbose, run := f.Race, f.Keep, f.Verbose, f.Run
	start := time.Now()
	known, err := suiterun.ParseKnown(knownFailuresText, passes)
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
	modDir, err := suiterun.GoOutput("", "list", "-m", "-f", "{{.Path}} {{.Dir}}")
	if err != nil {
		return err
	}
	modPath, modDir, _ := strings.Cut(modDir, " ")
	if modPath != ncrucesModule {
		return fmt.Errorf("run it from the ncruces module (%s), not %s", ncrucesModule, modPath)
	}
	root, err := suiterun.GoOutput(modDir, "list", "-m", "-f", "{{with .Replace}}{{.Dir}}{{end}}", rootModule)
	if err != nil {
		return err
	}
	if root == "" {
		return fmt.Errorf("%s is not replaced by a directory in %s/go.mod", rootModule, modDir)
	}
	srcDir, err := ncrucesBase.Source(modDir, "the ncruces module")
	if err != nil {
		return err
	}
	scratch, remove, err := suiterun.Scratch("cleolease-ncrucessuite-", keep, func(dir string) error {
		return writeScratch(dir, modDir, root, filepath.Join(srcDir, "driver"))
	})
	if err != nil {
		return err
	}
	defer remove()

	failed := map[string]string{}
	slow := map[string]time.Duration{}
	for _, p := range runPasses {
		res, err := suiterun.Run(passOptions(scratch, p, race, run))
		if err != nil {
			return fmt.Errorf("%s pass: %w", p, err)
		}
		fmt.Printf("%s pass: %d tests and examples passed, %d failed\n", p, res.Passed, len(res.Failed))
		for name, out := range res.Failed {
			failed[p+":"+name] = out
		}
		for name, d := range res.Slow {
			slow[p+":"+name] = d
		}
	}
	suiterun.PrintSlow(os.Stdout, slow)
	fmt.Printf("ncruces %s's driver tests through cleolease-ncruces (passes %s, race %v): %d failed, %d listed in known_failures.txt, %s\n",
		ncrucesVersion, strings.Join(runPasses, " and "), race, len(failed), len(known), time.Since(start).Round(time.Second))
	// Failures are named pass:Test. With -run, listed tests that did not
	// run are not judged; nor are those of a pass that did not run (-pass).
	judged := func(test string) bool {
		p, _, _ := strings.Cut(test, ":")
		return run == "" && slices.Contains(runPasses, p)
	}
	return suiterun.Compare(os.Stdout, failed, known, judged, verbose)
}

// passOptions says how to run one pass of go test in the scratch module
// dir: its temporary files go into a directory of the pass's there, and
// without the race detector the tests build with cgo off, as a program on
// ncruces does.
func passOptions(dir, pass string, race bool, run string) suiterun.Options {
	env := []string{"CGO_ENABLED=0", "CLEOLEASE_NCRUCESSUITE_FILES=0"}
	if race {
		env[0] = "CGO_ENABLED=1"
	}
	if pass == "files" {
		env[1] = "CLEOLEASE_NCRUCESSUITE_FILES=1"
	}
	return suiterun.Options{
		Dir:  dir,
		Tmp:  filepath.Join(dir, "tmp-"+pass),
		Env:  env,
		Race: race,
		Run:  run,
	}
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
	if err := suiterun.WriteGoMod(dir, modDir, scratchModule, []string{ncrucesModule},
		[]suiterun.Replace{{Path: ncrucesModule, Dir: modDir}, {Path: rootModule, Dir: root}}); err != nil {
		return err
	}
	internals, err := shimInternals()
	if err != nil {
		return err
	}
	rewrite := func(name string, src []byte, leaveOut map[string]bool) ([]byte, error) {
		return rewriteFile(name, src, leaveOut, internals)
	}
	if err := suiterun.CopyTests(dir, srcDir, "ncruces's driver", leftOut, rewrite); err != nil {
		return err
	}
	return writeShim(dir, internals)
}
