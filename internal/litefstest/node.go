//go:build linux

package litefstest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyLine is what litefs mount prints once the node is primary or has
// connected to the primary and synced (cmd/litefs/mount_linux.go in
// github.com/superfly/litefs v0.5.14).
const readyLine = "connected to cluster, ready"

// Time limits of the harness. They bound waits for a condition; none is a
// sleep.
const (
	readyTimeout = 60 * time.Second // a node's ready line after start
	stopTimeout  = 30 * time.Second // litefs's exit after SIGTERM
)

// Node is one LiteFS node of a Cluster: a litefs mount process (when
// running), its FUSE mount directory and its data directory. Its HTTP
// port and directories stay the same across restarts.
type Node struct {
	// Name is the node's LiteFS hostname ("node1", "node2"); a replica's
	// .primary file holds its primary's Name.
	Name string
	// Mount is the node's FUSE mount directory: open databases there.
	Mount string
	// Data is LiteFS's own data directory of the node.
	Data string
	// URL is the node's LiteFS HTTP API ("http://127.0.0.1:PORT").
	URL string

	t     testing.TB
	tools Tools
	dir   string // holds Mount, Data, the config and the log
	addr  string // 127.0.0.1:PORT

	mu     sync.Mutex
	proc   *process // nil when stopped
	leader *Node    // the primary the node last started with (itself when primary)
}

// process is one run of litefs mount.
type process struct {
	cmd    *exec.Cmd
	ready  chan struct{} // closed when the ready line was printed
	exited chan struct{} // closed when the process was reaped
	err    error         // how it exited; read after exited is closed
	log    *tail
}

// newNode makes the directories of node name under dir and picks its port.
func newNode(t testing.TB, tools Tools, dir, name string) *Node {
	t.Helper()
	n := &Node{Name: name, t: t, tools: tools, dir: filepath.Join(dir, name)}
	n.Mount = filepath.Join(n.dir, "mnt")
	n.Data = filepath.Join(n.dir, "data")
	for _, d := range []string{n.Mount, n.Data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("litefstest: no free port: %v", err)
	}
	n.addr = ln.Addr().String()
	ln.Close()
	n.URL = "http://" + n.addr
	return n
}

// Path returns the path of database name (a file name) in the node's mount.
func (n *Node) Path(name string) string { return filepath.Join(n.Mount, name) }

// Running reports whether the node's litefs process is running.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

// IsPrimary reports whether the node was last started as the primary.
func (n *Node) IsPrimary() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader == n
}

// Promote restarts the node (stopping it first if it runs) as the static
// primary of the cluster, keeping its data: the failover step after the
// former primary stopped. It returns once the node is ready.
func (n *Node) Promote() {
	n.t.Helper()
	n.Stop()
	n.start(n)
}

// Follow restarts the node (stopping it first if it runs) as a replica of
// primary, which must be running, and returns once it has connected.
func (n *Node) Follow(primary *Node) {
	n.t.Helper()
	n.Stop()
	n.start(primary)
}

// Restart stops the node and starts it again in its last role; a replica
// follows the node it last followed.
func (n *Node) Restart() {
	n.t.Helper()
	n.mu.Lock()
	last := n.leader
	n.mu.Unlock()
	n.Stop()
	if last == nil {
		n.t.Fatalf("litefstest: %s was never started", n.Name)
	}
	n.start(last)
}

// Stop ends the node's litefs process with SIGTERM (SIGKILL if it has not
// exited within 30 s) and unmounts its mount if litefs left it mounted.
// Stopping a stopped node does nothing.
func (n *Node) Stop() {
	n.t.Helper()
	n.end(syscall.SIGTERM)
}

// Kill ends the node's litefs process with SIGKILL, as a crash would, and
// unmounts the mount it leaves behind.
func (n *Node) Kill() {
	n.t.Helper()
	n.end(syscall.SIGKILL)
}

// end signals the running process, waits for it and unmounts.
func (n *Node) end(sig syscall.Signal) {
	n.t.Helper()
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p != nil {
		p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			n.t.Errorf("litefstest: %s did not exit within %s of %v; killing it", n.Name, stopTimeout, sig)
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if err := unmount(n.tools.Fusermount, n.Mount); err != nil {
		n.t.Errorf("litefstest: %s: %v", n.Name, err)
	}
}

// config is the node's litefs.yml for a start with primary as the static
// primary (n itself to be the primary).
func (n *Node) config(primary *Node) string {
	return fmt.Sprintf(`# written by internal/litefstest
exit-on-error: true
fuse:
  dir: %q
data:
  dir: %q
http:
  addr: %q
lease:
  type: static
  candidate: %t
  hostname: %q
  advertise-url: %q
tracing:
  enabled: false
`, n.Mount, n.Data, n.addr, primary == n, primary.Name, primary.URL)
}

// start runs litefs mount with primary as the static primary and waits
// for the ready line; a failure stops what it started and fails the test.
func (n *Node) start(primary *Node) {
	n.t.Helper()
	cfg := filepath.Join(n.dir, "litefs.yml")
	if err := os.WriteFile(cfg, []byte(n.config(primary)), 0o644); err != nil {
		n.t.Fatal(err)
	}
	p, err := launch(n.tools.LiteFS, cfg, filepath.Join(n.dir, "litefs.log"))
	if err != nil {
		n.t.Fatalf("litefstest: %s: %v", n.Name, err)
	}
	n.mu.Lock()
	n.proc, n.leader = p, primary
	n.mu.Unlock()
	select {
	case <-p.ready:
		if !mounted(n.Mount) {
			n.Kill()
			n.t.Fatalf("litefstest: %s printed %q but %s is not a LiteFS mount; log:\n%s", n.Name, readyLine, n.Mount, p.log)
		}
	case <-p.exited:
		n.Stop()
		n.t.Fatalf("litefstest: %s exited before %q (%v); log:\n%s", n.Name, readyLine, p.err, p.log)
	case <-time.After(readyTimeout):
		n.Kill()
		n.t.Fatalf("litefstest: %s not ready within %s; log:\n%s", n.Name, readyTimeout, p.log)
	}
}

// launch starts litefs mount -config cfg, appending its output to logPath
// and keeping its tail.
func launch(bin, cfg, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	cmd := exec.Command(bin, "mount", "-config", cfg)
	cmd.Stdout, cmd.Stderr = w, w
	p := &process{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{}), log: &tail{}}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	w.Close()
	go func() {
		defer logFile.Close()
		defer r.Close()
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			p.log.add(line)
			if !seen && strings.Contains(line, readyLine) {
				seen = true
				close(p.ready)
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// tail keeps the last 40 lines of a node's log for failure messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-40:]
	}
}

// String returns the kept lines, one a line.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
