//go:build linux

package litefstest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// mounted reports whether dir is the mount point of a LiteFS mount (type
// fuse, source litefs) in /proc/self/mountinfo.
func mounted(dir string) bool {
	src, ok := mountSource(dir)
	return ok && src == "litefs"
}

// mountSource returns the source (field 10 of proc(5)'s mountinfo) of the
// mount whose mount point is dir, and whether there is one.
func mountSource(dir string) (string, bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	src, ok := "", false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescape(fields[4]) != dir {
			continue
		}
		for i := 5; i+2 < len(fields); i++ {
			if fields[i] == "-" {
				src, ok = unescape(fields[i+2]), true // the last mount over dir wins
				break
			}
		}
	}
	return src, ok
}

// unescape decodes mountinfo's octal escapes (\040 for a space, …).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%3o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmount unmounts dir with fusermount3 -u when something is still mounted
// there (litefs unmounts on a clean exit, not when killed), lazily (-z) if
// a file in it is still open.
func unmount(fusermount, dir string) error {
	if _, ok := mountSource(dir); !ok {
		return nil
	}
	out, err := exec.Command(fusermount, "-u", dir).CombinedOutput()
	if _, ok := mountSource(dir); !ok {
		return nil
	}
	out2, err2 := exec.Command(fusermount, "-u", "-z", dir).CombinedOutput()
	if _, ok := mountSource(dir); !ok {
		return nil
	}
	return fmt.Errorf("cannot unmount %s: fusermount3 -u: %v %s; -u -z: %v %s", dir, err, strings.TrimSpace(string(out)), err2, strings.TrimSpace(string(out2)))
}
