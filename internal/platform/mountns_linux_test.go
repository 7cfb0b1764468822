//go:build linux

package platform

import (
	"os"
	"os/exec"
	"testing"
)

// A process of this mount namespace resolves paths as this one does; a
// pid that runs nothing, or out of range, cannot be told.
func TestSamePathsAs(t *testing.T) {
	if !SamePathsAs(int64(os.Getpid())) {
		t.Fatal("this process: false")
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := int64(cmd.Process.Pid)
	if !SamePathsAs(pid) {
		t.Fatal("a child of this process, in its mount namespace: false")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if SamePathsAs(pid) {
		t.Fatal("a pid that has exited: true")
	}
	if SamePathsAs(0) || SamePathsAs(MaxPID+1) {
		t.Fatal("a pid out of range: true")
	}
}
