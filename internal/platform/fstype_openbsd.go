//go:build openbsd

package platform

import "golang.org/x/sys/unix"

// fsTypeName returns statfs(2)'s f_fstypename for dir.
func fsTypeName(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	return cString(st.F_fstypename[:]), nil
}
