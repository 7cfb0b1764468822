package proctest

import (
	"errors"
	"io"
	"os/exec"
	"runtime"
	"syscall"
)

// errorInternal is Windows' ERROR_INTERNAL_ERROR (1359). Wine 8's
// CreateProcess returns it now and then for a program it starts a moment
// later without complaint ("fork/exec …lease.test.exe: Internal error." in
// a CI run of the lease package's Windows binary, one start in thousands);
// real Windows documents no such transient failure of CreateProcess.
const errorInternal = syscall.Errno(1359)

// startAttempts bounds the attempts at a start Wine fails transiently.
const startAttempts = 5

// startPiped starts cmd, or a copy of it, with pipes to its stdin and
// stdout, and returns the started command. On Windows a start that fails
// with ERROR_INTERNAL_ERROR (errorInternal) is tried again on a fresh copy
// (an exec.Cmd starts once, and a failed Start closes its pipes), up to
// startAttempts times in all; any other error is returned at once. A
// command made by exec.CommandContext is not retried: its context cannot
// be copied.
func startPiped(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	template := cloneCmd(cmd)
	for attempt := 1; ; attempt++ {
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			in.Close()
			return nil, nil, nil, err
		}
		err = cmd.Start()
		if err == nil {
			return cmd, in, out, nil
		}
		if !retryableStart(runtime.GOOS, err) || cmd.Cancel != nil || attempt == startAttempts {
			return nil, nil, nil, err
		}
		cmd = cloneCmd(template)
	}
}

// retryableStart reports whether a Start that failed with err on goos is
// worth another attempt: only Wine's transient ERROR_INTERNAL_ERROR is.
func retryableStart(goos string, err error) bool {
	return goos == "windows" && errors.Is(err, errorInternal)
}

// cloneCmd returns an unstarted command with cmd's program, arguments,
// environment, directory, standard files, extra files and OS attributes.
func cloneCmd(cmd *exec.Cmd) *exec.Cmd {
	return &exec.Cmd{
		Path:        cmd.Path,
		Args:        cmd.Args,
		Env:         cmd.Env,
		Dir:         cmd.Dir,
		Stdin:       cmd.Stdin,
		Stdout:      cmd.Stdout,
		Stderr:      cmd.Stderr,
		ExtraFiles:  cmd.ExtraFiles,
		SysProcAttr: cmd.SysProcAttr,
		WaitDelay:   cmd.WaitDelay,
	}
}
