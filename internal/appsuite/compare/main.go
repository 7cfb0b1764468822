// Command compare compares two runs of one test suite recorded with
// go test -json: it prints every test that passes in the first run and
// does not pass in the second (it fails, is skipped or is missing), and
// every test or package that fails in the second run and did not fail in
// the first (a new failure), and exits 1 if there is any. It exits 0 when
// the second run has the same passes and no new failure, and 2 when a file
// cannot be read.
//
//	go run ./internal/appsuite/compare FIRST.json SECOND.json
//
// Each test is named by its package and its name (subtests included); its
// result is the last pass, fail or skip the file records for it. A package
// that does not build, or whose test binary fails outside any test, counts
// as a failure of the package itself (go test records its fail event with
// no test name). Lines that are not JSON (go test
// writes some build errors as plain text) are ignored. A summary of both
// runs goes to standard error.
//
//snippet:nocompile go run
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is the part of a go test -json event (go doc test2json) that
// decides a result.
type event struct {
	Action  string
	Package string
	Test    string
}

// packageResult is the key of a package's own result.
const packageResult = "(package)"

// results maps "package test" (test is packageResult for the package's
// own result) to "pass", "fail" or "skip".
type results map[string]string

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compare FIRST.json SECOND.json")
		os.Exit(2)
	}
	first, err := readFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	second, err := readFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", os.Args[1], first.summary())
	fmt.Fprintf(os.Stderr, "%s: %s\n", os.Args[2], second.summary())

	lost, newFail := diff(first, second)
	for _, k := range lost {
		got := second[k]
		if got == "" {
			got = "missing"
		}
		fmt.Printf("passes in the first, not in the second (%s): %s\n", got, k)
	}
	for _, k := range newFail {
		was := first[k]
		if was == "" {
			was = "missing"
		}
		fmt.Printf("new failure in the second (was %s): %s\n", was, k)
	}
	if len(lost)+len(newFail) > 0 {
		os.Exit(1)
	}
	fmt.Println("same passes, no new failure")
}

// diff returns, sorted, the keys that pass in first and not in second, and
// those that fail in second without failing in first (a key already in the
// first list is not repeated in the second).
func diff(first, second results) (lost, newFail []string) {
	for k, r := range first {
		if r == "pass" && second[k] != "pass" {
			lost = append(lost, k)
		}
	}
	for k, r := range second {
		if r == "fail" && first[k] != "fail" && first[k] != "pass" {
			newFail = append(newFail, k)
		}
	}
	slices.Sort(lost)
	slices.Sort(newFail)
	return lost, newFail
}

func readFile(name string) (results, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

func read(f io.Reader) (results, error) {
	r := results{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Package == "" {
				continue
			}
			test := e.Test
			if test == "" {
				test = packageResult
			}
			r[e.Package+" "+test] = e.Action
		}
	}
	return r, sc.Err()
}

// summary counts the tests (not the packages) by result, and the packages
// that fail.
func (r results) summary() string {
	n := map[string]int{}
	var failedPkgs []string
	for k, v := range r {
		if strings.HasSuffix(k, " "+packageResult) {
			if v == "fail" {
				failedPkgs = append(failedPkgs, strings.TrimSuffix(k, " "+packageResult))
			}
			continue
		}
		n[v]++
	}
	s := fmt.Sprintf("%d tests: %d pass, %d fail, %d skip", n["pass"]+n["fail"]+n["skip"], n["pass"], n["fail"], n["skip"])
	if len(failedPkgs) > 0 {
		slices.Sort(failedPkgs)
		s += "; failing packages: " + strings.Join(failedPkgs, ", ")
	}
	return s
}
