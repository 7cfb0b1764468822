//go:build unix

package lease

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

func TestBreakFencesAStoppedHolder(t *testing.T) {
	path := newDB(t)
	holder := startChild(t, "hold", path)
	holder.expect("held")
	holder.Cmd.Process.Signal(syscall.SIGSTOP)
	e := openEngine(t, path, func(o *Options) { o.Linger = 0 })
	if _, err := e.Break(context.Background(), "s", "l", false); !errors.Is(err, ErrHolderAlive) {
		t.Fatalf("break without force: %v, want ErrHolderAlive", err)
	}
	if _, err := e.Break(context.Background(), "s", "l", true); err != nil {
		t.Fatal(err)
	}
	h, err := e.Acquire(context.Background(), "s", "l", req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	holder.Cmd.Process.Signal(syscall.SIGCONT)
	holder.send("go")
	if got := holder.expect("commit"); got == "ok" {
		t.Fatal("a broken holder committed")
	}
	var n int
	rawDB(t, path).QueryRow(`SELECT count(*) FROM grants WHERE who = 'hold'`).Scan(&n)
	if n != 0 {
		t.Fatalf("the fenced write landed (%d rows)", n)
	}
}
