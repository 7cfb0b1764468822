//go:build darwin || freebsd || dragonfly

package platform

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FileSystem reports the filesystem holding dir, a directory (pass the
// directory of the database, which may not exist yet), from the
// f_fstypename that statfs(2) returns for dir ("apfs", "nfs", "smbfs",
// "macfuse", …). It opens nothing under dir. Errors: statfs's, wrapped
// with dir.
func FileSystem(dir string) (FSInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return FSInfo{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return classifyName(namedTypes, cString(st.Fstypename[:])), nil
}
