//go:build !linux && !darwin && !freebsd && !dragonfly && !openbsd && !netbsd && !windows

package platform

import "fmt"

// FileSystem cannot tell a filesystem's type on this operating system: it
// returns an error wrapping ErrUnsupported, and the caller decides what an
// unknown filesystem means.
func FileSystem(dir string) (FSInfo, error) {
	return FSInfo{}, fmt.Errorf("%s: %w", dir, ErrUnsupported)
}
