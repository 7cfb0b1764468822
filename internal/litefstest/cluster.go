//go:build linux

package litefstest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/testdir"
)

// Cluster is a two-node LiteFS cluster started by Start for one test.
type Cluster struct {
	// Primary is the node started as the static primary ("node1").
	Primary *Node
	// Replica is the node started as its replica ("node2"); Promote makes
	// it the primary after a failover.
	Replica *Node
}

// Start starts a primary, waits until it is ready, then a replica of it,
// and waits until the replica has connected. Both are stopped and
// unmounted when the test ends. When litefs, fusermount3 or /dev/fuse is
// missing the test is skipped naming them, or fails under CI=true.
func Start(t testing.TB) *Cluster {
	t.Helper()
	tools := Require(t)
	dir := filepath.Join(testdir.New(t), "litefs")
	c := &Cluster{
		Primary: newNode(t, tools, dir, "node1"),
		Replica: newNode(t, tools, dir, "node2"),
	}
	// Registered after testdir.New, so it runs before the directory is
	// removed: the mounts are gone by then.
	t.Cleanup(func() {
		c.Replica.Stop()
		c.Primary.Stop()
	})
	c.Primary.start(c.Primary)
	c.Replica.start(c.Primary)
	return c
}

// Require returns the tools a cluster needs, or skips the test naming what
// is missing (fails it under CI=true).
func Require(t testing.TB) Tools {
	t.Helper()
	tools, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: a LiteFS test may not skip)", err)
		}
		t.Skip(err)
	}
	return tools
}

// WaitReplicated waits (at most 30 s, failing the test after) until
// database name (a file name in the mounts) is at the same position on to
// as on from: the same TXID and checksum in their "<name>-pos" files.
// from's position is read once, at the call.
func WaitReplicated(t testing.TB, name string, from, to *Node) {
	t.Helper()
	want, err := os.ReadFile(from.Path(name) + "-pos")
	if err != nil {
		t.Fatalf("litefstest: position of %s on %s: %v", name, from.Name, err)
	}
	var got []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err = os.ReadFile(to.Path(name) + "-pos")
		if err == nil && bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("litefstest: %s on %s at %q (err %v), want %q as on %s", name, to.Name, got, err, want, from.Name)
		}
		time.Sleep(5 * time.Millisecond) // poll interval; the condition above decides
	}
}

// PrimaryName returns the content of n's .primary file (the primary's
// Name, present only on a replica connected to a primary), and whether
// the file exists.
func PrimaryName(n *Node) (string, bool) {
	b, err := os.ReadFile(filepath.Join(n.Mount, ".primary"))
	if err != nil {
		return "", false
	}
	return string(bytes.TrimSpace(b)), true
}
