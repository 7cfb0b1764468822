// Command cleolease shows, inspects and repairs SQLite files shared by
// several processes through the cleolease driver.
//
//	cleolease demo                       the problem and the fix, side by side
//	cleolease status DB [--json] [--watch]
//	cleolease migrate DB --source URL {up|down N|goto V|version|force V}
//	cleolease break DB --scope S --lane L [--force]
//	cleolease bench [--duration D] [--runs N] [--only LOAD,…] [--scaling] [--sync LEVEL]
//
// Exit status: 0 on success, 1 when the command failed, 2 for a usage error.
// Every error is one line on standard error.
//
//snippet:nocompile cleolease
package main

// Where things are: the operational commands are status.go, break.go and
// migrate.go, with what they share in dbfile.go (opening a file read-only,
// the version table), inspect.go, migrations.go (migration sources) and
// args.go. The measurements are demo.go (with demo_migrations.go, its
// embedded schema) and bench.go; their worker processes are worker.go,
// their output progress.go and format.go. wrap.go keeps every line of
// output within 100 columns. The workload they run, and
// BenchmarkContention with them, is internal/workload.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries the exit status of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usagef reports a usage error (exit status 2).
func usagef(format string, args ...any) error {
	return &exitError{2, fmt.Errorf(format, args...)}
}

// failf reports a failure (exit status 1).
func failf(format string, args ...any) error {
	return &exitError{1, fmt.Errorf(format, args...)}
}

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdout, stderr)
	root.SetArgs(fixArgs(args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	code := 2 // cobra's own errors: unknown command or flag, bad flag value
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	msg := oneLine(err.Error())
	name := "cleolease"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	if code == 2 {
		fmt.Fprintf(stderr, "%s: %s (see '%s --help')\n", name, msg, name)
	} else {
		fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	}
	return code
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "cleolease",
		Short: "Writer leases and safe migrations for SQLite files shared by several processes",
		Long: `cleolease is a database/sql driver for SQLite files shared by several
processes: every write takes a cross-process writer lease per (scope, lane),
so writers are served in order with no "database is locked" errors, and
migrations run exactly once, under the cold-open lease.

This command shows the problem and the fix (demo), inspects a file (status),
runs migrations under the cold-open lease (migrate), releases a lane held by
a dead or hung holder (break) and measures the driver against raw
go-sqlite3 and against a flock around each transaction (bench). DB is
always a file path, not a DSN.

Exit status: 0 on success, 1 when the command failed, 2 for a usage error.
Every error is one line on standard error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v", err)
	})
	root.CompletionOptions.DisableDefaultCmd = true
	// Flag descriptions wrap to the command's width (cobra's default
	// template does not wrap them).
	root.SetUsageTemplate(strings.ReplaceAll(root.UsageTemplate(), ".FlagUsages |", ".FlagUsagesWrapped "+strconv.Itoa(width)+" |"))
	root.AddCommand(newDemoCmd(), newStatusCmd(), newMigrateCmd(), newBreakCmd(), newBenchCmd(), newWorkerCmd())
	return root
}

// runE adapts a command body: errors it returns are failures (exit 1)
// unless already marked as usage errors.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil {
			return nil
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{1, err}
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return usagef("unknown command %q", args[0])
		}
		return usagef("takes no arguments, got %q", args[0])
	}
	return nil
}

// oneDB accepts exactly one positional argument, the database path.
func oneDB(cmd *cobra.Command, args []string) error {
	switch len(args) {
	case 0:
		return usagef("missing the database path")
	case 1:
		if args[0] == "" {
			return usagef("empty database path")
		}
		return nil
	}
	return usagef("takes one database path, got %d arguments", len(args))
}
