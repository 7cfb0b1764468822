package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cleocode/cleolease/lease"
)

func newBreakCmd() *cobra.Command {
	var (
		scope, lane string
		force       bool
	)
	cmd := &cobra.Command{
		Use:   "break DB --scope S --lane L [--force]",
		Short: "Release a lane held by a dead or hung holder",
		Long: `break ends the active lease of (scope, lane) in DB, so a dead or hung
holder stops blocking the lane: the row is deactivated (its epoch is kept, so
the old holder is fenced: its next commit fails with a lease-lost error) and
the lane is handed to the first live waiter, whose epoch is higher.

A holder that is provably alive (it keeps its liveness lock) is refused
unless --force: check 'cleolease status DB' first; a live holder whose
heartbeat is older than its TTL is probably hung.`,
		Example: `  cleolease break app.db --scope main --lane default
  cleolease break app.db --scope main --lane default --force`,
		Args: oneDB,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if scope == "" || lane == "" {
				return usagef("--scope and --lane are required")
			}
			return runBreak(cmd.Context(), cmd.OutOrStdout(), args[0], scope, lane, force)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&scope, "scope", "", "scope of the lane (required)")
	f.StringVar(&lane, "lane", "", "lane to release (required)")
	f.BoolVar(&force, "force", false, "break even a holder that is provably alive")
	return cmd
}

func runBreak(ctx context.Context, w io.Writer, path, scope, lane string, force bool) error {
	// Check read-only first: lease.Open would create the lease tables in a
	// database that has none.
	err := readOnly(ctx, path, func(db *sql.DB) error {
		if err := requireLeaseTables(ctx, db, path); err != nil {
			return err
		}
		lanes, err := inspectDB(ctx, db, path, time.Now())
		if err != nil {
			return sqliteFailure(path, err)
		}
		var names []string
		for _, l := range lanes {
			if l.Scope == scope && l.Lane == lane {
				return nil
			}
			names = append(names, l.Scope+"/"+l.Lane)
		}
		if len(names) == 0 {
			return failf("%s: no lane %s/%s: no lease has been taken in this database", path, scope, lane)
		}
		return failf("%s: no lane %s/%s (lanes: %s)", path, scope, lane, strings.Join(names, ", "))
	})
	if err != nil {
		return err
	}
	dsn, err := fileURI(path, "_busy_timeout=30000")
	if err != nil {
		return failf("%s: %v", path, err)
	}
	e, err := lease.Open(ctx, lease.Options{Path: path, DSN: dsn})
	if err != nil {
		return failf("%s: %v", path, err)
	}
	defer e.Close()
	h, err := e.Break(ctx, scope, lane, force)
	if errors.Is(err, lease.ErrHolderAlive) {
		return failf("refusing to break %s/%s: holder %s (pid %d) is alive (%s); use --force if it is hung",
			scope, lane, h.ID, h.PID, h.Why)
	}
	if err != nil {
		return failf("%s: %v", path, err)
	}
	if h == nil {
		fmt.Fprintf(w, "%s/%s: no active holder; nothing to break\n", scope, lane)
		return nil
	}
	state := "dead"
	if h.Alive {
		state = "alive, forced"
	}
	fmt.Fprintf(w, "broke %s/%s: holder %s (pid %d, %s: %s) at epoch %d; the next grant gets a higher epoch\n",
		scope, lane, h.ID, h.PID, state, h.Why, h.Epoch)
	return nil
}
