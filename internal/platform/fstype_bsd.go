//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package platform

import "fmt"

// FileSystem reports the filesystem holding dir, a directory (pass the
// directory of the database, which may not exist yet), from the
// f_fstypename that statfs(2) (macOS, FreeBSD, DragonFly, OpenBSD) or
// statvfs(2) (NetBSD) returns for dir ("apfs", "nfs", "smbfs", "macfuse",
// "ffs", "puffs", …). It opens nothing under dir. Errors: the call's,
// wrapped with dir.
func FileSystem(dir string) (FSInfo, error) {
	name, err := fsTypeName(dir)
	if err != nil {
		return FSInfo{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return classifyName(namedTypes, name), nil
}
