//go:build netbsd

package platform

import "golang.org/x/sys/unix"

// fsTypeName returns statvfs(2)'s f_fstypename for dir.
func fsTypeName(dir string) (string, error) {
	var st unix.Statvfs_t
	if err := unix.Statvfs(dir, &st); err != nil {
		return "", err
	}
	return cString(st.Fstypename[:]), nil
}
