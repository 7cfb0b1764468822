package suiterun

import (
	"bytes"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func TestParseKnown(t *testing.T) {
	got, err := ParseKnown("# comment\n\nTestA\tsql.Conn.Raw (why)\nTestB/sub some difference\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (KnownFailure{"TestA", "sql.Conn.Raw (why)"}) || got[1] != (KnownFailure{"TestB/sub", "some difference"}) {
		t.Errorf("ParseKnown = %+v", got)
	}
	for _, bad := range []string{"TestA\n", "TestA x\nTestA y\n"} {
		if _, err := ParseKnown(bad, nil); err == nil {
			t.Errorf("ParseKnown(%q) accepted it", bad)
		}
	}
}

func TestParseKnownPasses(t *testing.T) {
	passes := []string{"memdb", "files"}
	known, err := ParseKnown("# c\nTest_A\tdiff a\nfiles:Test_B diff b\n", passes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range known {
		got = append(got, k.Test+"="+k.Difference)
	}
	want := "memdb:Test_A=diff a files:Test_A=diff a files:Test_B=diff b"
	if strings.Join(got, " ") != want {
		t.Errorf("ParseKnown: %q, want %q", strings.Join(got, " "), want)
	}
	for _, bad := range []string{"Test_A\n", "Test_A d\nmemdb:Test_A d\n", "wine:Test_A d\n"} {
		if _, err := ParseKnown(bad, passes); err == nil {
			t.Errorf("ParseKnown(%q): no error", bad)
		}
	}
}

func TestLeftOutByFile(t *testing.T) {
	decls, files, err := LeftOutByFile([]LeftOut{
		{File: "a_test.go", Reason: "r"},
		{File: "b_test.go", Decl: "TestX", Reason: "r"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !files["a_test.go"] || len(files) != 1 || !decls["b_test.go"]["TestX"] || len(decls) != 1 {
		t.Errorf("LeftOutByFile: %v, %v", decls, files)
	}
	if _, _, err := LeftOutByFile([]LeftOut{{File: "a_test.go"}}); err == nil {
		t.Error("a LeftOut without a reason: no error")
	}
}

// events builds go test -json output, one event a line.
func events(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// A panicking test fails and is the one the next run skips; the tests that
// finished are skipped too.
func TestReadEventsPanic(t *testing.T) {
	r, _, pkgFailed, err := readEvents(strings.NewReader(events(
		`{"Action":"run","Test":"TestOK"}`,
		`{"Action":"pass","Test":"TestOK","Elapsed":6}`,
		`{"Action":"run","Test":"TestP"}`,
		`{"Action":"output","Test":"TestP","Output":"panic: boom\n"}`,
		`{"Action":"fail","Test":"TestP"}`,
		`{"Action":"fail"}`,
	)))
	if err != nil || !pkgFailed {
		t.Fatalf("err %v, package failed %v", err, pkgFailed)
	}
	if r.panicked != "TestP" || strings.Join(r.finished, ",") != "TestOK" || r.passed != 1 || r.slow["TestOK"] == 0 {
		t.Errorf("readEvents: %+v", r)
	}
	if !strings.Contains(r.failed["TestP"], "panic: boom") {
		t.Errorf("TestP's output: %q", r.failed["TestP"])
	}
}

// A test that started and never ended (log.Fatal, os.Exit) before the
// package failed counts as failed and ends the run; a parallel test paused
// then is not counted.
func TestReadEventsNeverEnded(t *testing.T) {
	r, _, _, err := readEvents(strings.NewReader(events(
		`{"Action":"run","Test":"TestOK"}`,
		`{"Action":"pass","Test":"TestOK"}`,
		`{"Action":"run","Test":"TestA"}`,
		`{"Action":"output","Test":"TestA","Output":"=== PAUSE TestA\n"}`,
		`{"Action":"run","Test":"TestB"}`,
		`{"Action":"output","Test":"TestB","Output":"exiting\n"}`,
		`{"Action":"fail"}`,
	)))
	if err != nil {
		t.Fatal(err)
	}
	if r.panicked != "TestB" || len(r.failed) != 1 || !strings.Contains(r.failed["TestB"], "exited during this test") {
		t.Errorf("readEvents: %+v", r)
	}
}

// A package that fails with no test running is not blamed on a test.
func TestReadEventsTimeout(t *testing.T) {
	r, out, _, err := readEvents(strings.NewReader(events(
		`{"Action":"run","Test":"TestSlow"}`,
		`{"Action":"output","Output":"panic: test timed out after 10m0s\n"}`,
		`{"Action":"fail"}`,
	)))
	if err != nil {
		t.Fatal(err)
	}
	if r.panicked != "" || len(r.failed) != 0 || !strings.Contains(out, "test timed out") {
		t.Errorf("readEvents: %+v, package output %q", r, out)
	}
}

func TestCompare(t *testing.T) {
	known := []KnownFailure{{"TestK", "k"}, {"TestFixed", "f"}, {"TestNotRun", "n"}}
	failed := map[string]string{"TestK": "out k\n", "TestNew": "out new\n"}
	var w bytes.Buffer
	err := Compare(&w, failed, known, func(test string) bool { return test != "TestNotRun" }, false)
	if err == nil || err.Error() != "1 unexpected failures, 1 listed tests passed" {
		t.Errorf("Compare: %v", err)
	}
	want := "  known: TestK (k)\nUNEXPECTED FAILURE: TestNew\n    out new\nLISTED BUT PASSED: TestFixed: take it off known_failures.txt (and its README mention)\n"
	if w.String() != want {
		t.Errorf("Compare printed\n%s\nwant\n%s", w.String(), want)
	}
	if err := Compare(&w, map[string]string{"TestK": ""}, known[:1], func(string) bool { return true }, false); err != nil {
		t.Errorf("Compare of the known failures alone: %v", err)
	}
}

// A bug is reported as such, and fails the comparison all the same.
func TestCompareBugs(t *testing.T) {
	failed := map[string]string{"TestBug/sub": "out bug\n", "TestNew": "out new\n"}
	var w bytes.Buffer
	err := CompareBugs(&w, failed, nil, []string{"TestBug/sub"}, func(string) bool { return true }, false)
	if err == nil || err.Error() != "2 unexpected failures, 0 listed tests passed" {
		t.Errorf("CompareBugs: %v", err)
	}
	want := "CLEOLEASE BUG (leftout.go's bugs): TestBug/sub\n    out bug\nUNEXPECTED FAILURE: TestNew\n    out new\n"
	if w.String() != want {
		t.Errorf("CompareBugs printed\n%s\nwant\n%s", w.String(), want)
	}
}

func TestDropDecls(t *testing.T) {
	src := "package p\n\n// A is kept.\nfunc A() {}\n\n// B goes.\nfunc B() {}\n\ntype T int\n\nfunc (T) B() {}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if err := DropDecls(f, "p.go", map[string]bool{"B": true}); err != nil {
		t.Fatal(err)
	}
	out, err := Format(fset, f)
	if err != nil {
		t.Fatal(err)
	}
	want := "package p\n\n// A is kept.\nfunc A() {}\n\ntype T int\n\nfunc (T) B() {}\n"
	if string(out) != want {
		t.Errorf("DropDecls: got\n%s\nwant\n%s", out, want)
	}
	if err := DropDecls(f, "p.go", map[string]bool{"Gone": true}); err == nil || !strings.Contains(err.Error(), "Gone") {
		t.Errorf("DropDecls of an undeclared name: %v", err)
	}
}
