// Package litefstest starts a two-node LiteFS cluster on 127.0.0.1 for a
// test: a primary and a replica with LiteFS's static lease, each with its
// own HTTP port, data directory and FUSE mount under one internal/testdir
// directory. It installs nothing: it finds the litefs binary on PATH or in
// $(go env GOPATH)/bin, needs /dev/fuse and fusermount3 (Debian's fuse3),
// and skips the test naming what is missing — except under CI (CI=true),
// where a missing piece fails the test. LiteFS installs with "go install
// github.com/superfly/litefs/cmd/litefs@v0.5.14".
//
// Start waits for each node's "connected to cluster, ready" line (no
// sleeps). Node.Stop, Node.Kill, Node.Promote and Node.Follow stop and
// restart a node, for failover tests. When the test ends, every node the
// cluster started is stopped (SIGTERM, then SIGKILL after a deadline) and
// its mount is unmounted with fusermount3 -u; only the processes the
// cluster started are signalled.
//
// Linux only: LiteFS's FUSE file system runs on Linux.
package litefstest
