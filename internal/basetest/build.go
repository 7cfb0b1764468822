package basetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleocode/cleolease/internal/platform"
	"github.com/cleocode/cleolease/internal/testdir"
)

// Tags returns the build tags a worker program must be built with to share
// a file with this process (the liveness tier: cleolease_portable when this
// build has it), followed by extra, comma-separated for go's -tags.
func Tags(extra ...string) string {
	var tags []string
	if platform.Portable {
		tags = append(tags, "cleolease_portable")
	}
	return strings.Join(append(tags, extra...), ",")
}

// MattnWorker builds the go-sqlite3 worker (internal/basetest/mattnworker,
// with cgo, in this process's liveness tier) into a directory of t's and
// returns its path: the go-sqlite3 process of a cgo-free base's mixed-base
// tests, whose own binary cannot link go-sqlite3. The build cache makes
// every build after the first a link. Where there is no C compiler it
// skips t, except under CI (CI=true), where it fails: CI's no-compiler
// step excludes the mixed-base tests by name.
func MattnWorker(t testing.TB) string {
	t.Helper()
	cc := "gcc"
	if out, err := exec.Command("go", "env", "CC").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		cc = strings.Fields(string(out))[0]
	}
	if _, err := exec.LookPath(cc); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no C compiler (%s) to build the go-sqlite3 worker under CI: %v", cc, err)
		}
		t.Skipf("no C compiler (%s) to build the go-sqlite3 worker: %v", cc, err)
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cleocode/cleolease").Output()
	if err != nil {
		t.Fatalf("locating the root module: %v", err)
	}
	bin := filepath.Join(testdir.New(t), "mattnworker")
	cmd := exec.Command("go", "build", "-tags", Tags(), "-o", bin, "./internal/basetest/mattnworker")
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the go-sqlite3 worker: %v\n%s", err, out)
	}
	return bin
}
