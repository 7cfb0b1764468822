//go:build (darwin || freebsd || netbsd || openbsd || dragonfly || (linux && cleolease_portable)) && !cleolease_pollwake

package platform

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/cleocode/cleolease/internal/testdir"
)

// nobody is the uid and gid the child of TestBellAcrossUsers runs as.
const nobody = 65534

// A process of another user sharing a database whose lock directory's
// path is too long for sun_path reaches this process's doorbell in the
// shared directory (and binds its own there). The child runs as uid
// 65534: root can switch to it; other users cannot, so the test skips
// for them.
func TestBellAcrossUsers(t *testing.T) {
	if os.Getenv("CLEOLEASE_BELL_CHILD") != "" {
		bellChild(t)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("running a child as another uid needs root (syscall.Credential)")
	}
	dir := filepath.Join(testdir.New(t), "a-directory-name-long-enough", "to-push-the-socket-path", "past-the-104-bytes-of-sun-path")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "x.db")
	os.WriteFile(db, nil, 0o644)
	fi, err := Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ListenBell(db, "a", fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := a.Recv(buf)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf[:n])
	}()
	// The test binary, copied where uid 65534 may run it.
	bin := filepath.Join(testdir.New(t), "platform.test")
	if err := copyExecutable(bin); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(bin), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(bin)), 0o755)
	cmd := exec.Command(bin, "-test.run=^TestBellAcrossUsers$", "-test.v")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), "CLEOLEASE_BELL_CHILD=1", "CLEOLEASE_BELL_DB="+db,
		"CLEOLEASE_BELL_ID="+fmt.Sprintf("%d:%d", fi.ID.Dev, fi.ID.Ino))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child as uid %d: %v\n%s", nobody, err, out)
	}
	// The child's send succeeded, so the datagram is in a's queue.
	if m := <-got; m != "hi from "+strconv.Itoa(nobody) {
		t.Fatalf("received %q", m)
	}
}

// bellChild is TestBellAcrossUsers's child: it binds its own doorbell and
// rings the parent's.
func bellChild(t *testing.T) {
	var id FileID
	if _, err := fmt.Sscanf(os.Getenv("CLEOLEASE_BELL_ID"), "%d:%d", &id.Dev, &id.Ino); err != nil {
		t.Fatal(err)
	}
	b, err := ListenBell(os.Getenv("CLEOLEASE_BELL_DB"), "b", id)
	if err != nil {
		t.Fatalf("uid %d: listen: %v", os.Getuid(), err)
	}
	defer b.Close()
	if err := b.Send("a", []byte("hi from "+strconv.Itoa(os.Getuid()))); err != nil {
		t.Fatalf("uid %d: send: %v", os.Getuid(), err)
	}
}

// copyExecutable copies this test binary to dst, executable by everyone.
func copyExecutable(dst string) error {
	src, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// The shared doorbell directory is made like /tmp (sticky, writable by
// everyone) whatever the umask, and one that is not (made by someone else
// without the sticky bit, or a symlink) is refused.
func TestSharedBellDir(t *testing.T) {
	id := FileID{Dev: 1, Ino: 2}
	root := filepath.Join(testdir.New(t), "bells")
	dir, err := sharedBellDir(root, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, dir} {
		fi, err := os.Lstat(d)
		if err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
			t.Fatalf("%s: %v, %v; want sticky and mode 0777", d, fi.Mode(), err)
		}
	}
	if again, err := sharedBellDir(root, id); err != nil || again != dir {
		t.Fatalf("second call: %q, %v", again, err)
	}
	plain := filepath.Join(testdir.New(t), "plain")
	os.Mkdir(plain, 0o777)
	os.Chmod(plain, 0o777)
	if _, err := sharedBellDir(plain, id); err != ErrUnsupported {
		t.Fatalf("root without the sticky bit: %v, want ErrUnsupported", err)
	}
	link := filepath.Join(testdir.New(t), "link")
	os.Symlink(root, link)
	if _, err := sharedBellDir(link, id); err != ErrUnsupported {
		t.Fatalf("root that is a symlink: %v, want ErrUnsupported", err)
	}
}
