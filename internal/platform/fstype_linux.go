//go:build linux

package platform

import (
	"bufio"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FileSystem reports the filesystem holding dir, a directory (pass the
// directory of the database, which may not exist yet). It calls statfs(2)
// on dir and, for a FUSE mount, reads /proc/self/mountinfo to learn the
// FUSE subtype or filesystem name (the type and source of the mount whose
// device number is dir's, from stat(2)); it
// opens nothing under dir. Errors: statfs's or stat's, wrapped with dir.
func FileSystem(dir string) (FSInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return FSInfo{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	magic := uint32(st.Type) // f_type is a 32-bit value whatever the Go type
	fuseType, source := "", ""
	if e, ok := linuxMagic[magic]; ok && e.class == classFUSE {
		var s unix.Stat_t
		if err := unix.Stat(dir, &s); err != nil {
			return FSInfo{}, fmt.Errorf("stat %s: %w", dir, err)
		}
		fuseType, source = mountType(uint64(s.Dev))
	}
	return classifyMagic(linuxMagic, magic, fuseType, source), nil
}

// mountType returns the filesystem type and source (fields 9 and 10 of
// proc(5)'s /proc/self/mountinfo, for example "fuse.sshfs" and
// "user@host:/dir", or "fuse" and "litefs") of the mount whose device is
// dev, or "" when they cannot be told.
func mountType(dev uint64) (fsType, source string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	return parseMountInfo(bufio.NewScanner(f), unix.Major(dev), unix.Minor(dev))
}
