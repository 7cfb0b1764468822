//go:build darwin || freebsd || dragonfly

package platform

import "golang.org/x/sys/unix"

// fsTypeName returns statfs(2)'s f_fstypename for dir ("apfs", "nfs",
// "smbfs", "macfuse", "ufs", …).
func fsTypeName(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	return cString(st.Fstypename[:]), nil
}
