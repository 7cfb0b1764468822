//go:build linux

package platform

import (
	"os"
	"strconv"
)

// SamePathsAs reports whether the process pid resolves every path as this
// process does: it runs in this process's mount namespace (both
// /proc/<pid>/ns/mnt links read and equal). false when it cannot tell:
// the process has gone, or belongs to another user (the kernel lets only
// a process that may trace pid read its namespace links). A private /tmp
// (systemd's PrivateTmp) or a container is another mount namespace: one
// path there can name another directory.
func SamePathsAs(pid int64) bool {
	if pid <= 0 || pid > MaxPID {
		return false
	}
	if pid == int64(os.Getpid()) {
		return true
	}
	mine, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return false
	}
	theirs, err := os.Readlink("/proc/" + strconv.FormatInt(pid, 10) + "/ns/mnt")
	return err == nil && theirs == mine
}
