package proctest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Only Windows' ERROR_INTERNAL_ERROR, as Wine's CreateProcess returns it
// now and then, earns a second attempt; a missing program or the same
// number on another system fails at once.
func TestRetryableStart(t *testing.T) {
	wine := &os.PathError{Op: "fork/exec", Path: `Z:\tmp\x.test.exe`, Err: errorInternal}
	cases := []struct {
		goos string
		err  error
		want bool
	}{
		{"windows", wine, true},
		{"linux", wine, false},
		{"windows", &os.PathError{Op: "fork/exec", Path: "x", Err: os.ErrNotExist}, false},
		{"windows", errors.New("exec: already started"), false},
	}
	for _, c := range cases {
		if got := retryableStart(c.goos, c.err); got != c.want {
			t.Errorf("retryableStart(%s, %v) = %v, want %v", c.goos, c.err, got, c.want)
		}
	}
}

// A copy made for a retry starts the same program, with the same
// arguments, environment and stderr, as the template.
func TestCloneCmdStartsTheSameProgram(t *testing.T) {
	var errb strings.Builder
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEcho$")
	cmd.Env = append(os.Environ(), "PROCTEST_ECHO=copied")
	cmd.Stderr = &errb
	c := cloneCmd(cmd)
	if c == cmd {
		t.Fatal("cloneCmd returned its argument")
	}
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if !strings.Contains(string(out), "echo copied") || !strings.Contains(errb.String(), "stderr copied") {
		t.Fatalf("stdout %q, stderr %q", out, errb.String())
	}
}

// TestHelperEcho is the program TestCloneCmdStartsTheSameProgram starts.
func TestHelperEcho(t *testing.T) {
	v := os.Getenv("PROCTEST_ECHO")
	if v == "" {
		return
	}
	os.Stdout.WriteString("echo " + v + "\n")
	os.Stderr.WriteString("stderr " + v + "\n")
}
