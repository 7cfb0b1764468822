//go:build !linux

package platform

import (
	"os"
	"runtime"
)

// SamePathsAs reports whether the process pid resolves every path as this
// process does. macOS and Windows have no per-process mount namespaces: a
// path names one file for every process of the host. Elsewhere (a BSD
// jail or chroot sees another tree under the same path) it cannot tell,
// and says false, unless pid is this process.
func SamePathsAs(pid int64) bool {
	if pid == int64(os.Getpid()) {
		return true
	}
	return pid > 0 && (runtime.GOOS == "darwin" || runtime.GOOS == "windows")
}
