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
		timeout     time.Duration
		epoch       int64
		sidecarDir  string
	)
	cmd := &cobra.Command{
		Use:   "break DB --scope S --lane L [--epoch N] [--force]",
		Short: "Release a lane held by a dead or hung holder",
		Long: `break ends the active lease of (scope, lane) in DB, so a dead or hung
holder stops blocking the lane: the row is deactivated (its epoch is kept, so
the old holder is fenced: its next commit fails with a lease-lost error) and
the lane is handed to the first live waiter, whose epoch is higher.

A holder that is alive by the evidence 'cleolease status DB' shows (it
keeps its liveness lock, or its pid runs) is refused at once unless --force;
a live holder whose heartbeat is older than its TTL is probably hung.

break only ever breaks the holder it saw: it prints that holder and epoch
first, and the break itself checks, in the transaction that breaks it, that
this epoch is still the active one. A holder that took the lane after the
command started (the one it saw released meanwhile) is left alone. --epoch N
(the epoch 'cleolease status' showed) breaks only if N is still active, and
fails otherwise. The last line says which holder and epoch were broken, or
why nothing was.

Breaking writes to the database, so it needs SQLite's write lock. A holder
stopped or hung inside a write transaction keeps that lock until the
transaction ends: break --force then gives up after --timeout, and only
ending that process (kill it) frees the database.`,
		Example: `  cleolease break app.db --scope main --lane default
  cleolease break app.db --scope main --lane default --epoch 42 --force`,
		Args: oneDB,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if scope == "" || lane == "" {
				return usagef("--scope and --lane are required")
			}
			if timeout <= 0 {
				return usagef("--timeout must be positive")
			}
			if cmd.Flags().Changed("epoch") && epoch <= 0 {
				return usagef("--epoch must be positive")
			}
			return runBreak(cmd.Context(), cmd.OutOrStdout(), args[0], sidecarDir, scope, lane, epoch, force, timeout)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&scope, "scope", "", "scope of the lane (required)")
	f.StringVar(&lane, "lane", "", "lane to release (required)")
	f.BoolVar(&force, "force", false, "break even a holder that looks alive (see 'cleolease status')")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for SQLite's write lock")
	f.StringVar(&sidecarDir, "sidecar-dir", "", "the directory the processes keep their liveness files in (their DSN's _lease_sidecar_dir; on a LiteFS mount, by default, the one they derive there)")
	f.Int64Var(&epoch, "epoch", 0, "break only if this epoch (from 'cleolease status') is still the active one")
	return cmd
}

// runBreak breaks (scope, lane) of path. want is the epoch to break (0:
// the one active when the command starts, if any); sidecarDir is
// --sidecar-dir ("" when not given).
func runBreak(ctx context.Context, w io.Writer, path, sidecarDir, scope, lane string, want int64, force bool, timeout time.Duration) error {
	// Check read-only first: lease.Open would create the lease tables in a
	// database that has none.
	var holderPID int64
	var seen *lease.HolderStatus
	err := readOnly(ctx, path, func(db *sql.DB) error {
		if err := requireLeaseTables(ctx, db, path); err != nil {
			return err
		}
		lanes, err := inspectDB(ctx, db, path, sidecarDirFor(path, sidecarDir), time.Now())
		if err != nil {
			return sqliteFailure(path, err)
		}
		var names []string
		for _, l := range lanes {
			if l.Scope == scope && l.Lane == lane {
				if l.Holder != nil {
					holderPID, seen = l.Holder.PID, l.Holder
				}
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
	explicit := want != 0
	switch {
	case seen == nil && !explicit:
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s/%s: no active holder; nothing to break", scope, lane)))
		return nil
	case seen != nil:
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s/%s: holder %s pid %d at epoch %d", scope, lane, seen.ID, seen.PID, seen.Epoch)))
		fmt.Fprintln(w, wrap("  ", "  ", aliveText(seen.Alive, seen.Liveness, seen.Why)))
		if !explicit {
			want = seen.Epoch // never break a holder that takes the lane from now on
		}
		// Refuse at once what the break itself would refuse, without
		// waiting for SQLite's write lock, which a holder inside a write
		// transaction keeps: the live holder is known, and epochs only
		// grow, so one that is not active now never will be.
		if seen.Epoch != want {
			return failf("refusing to break %s/%s: epoch %d is no longer active; holder %s (pid %d) holds it at epoch %d (break --epoch %d to break that one)",
				scope, lane, want, seen.ID, seen.PID, seen.Epoch, seen.Epoch)
		}
		if seen.Alive && !force {
			return refuseAlive(scope, lane, seen)
		}
	}
	dsn, err := fileURI(path, "_busy_timeout=30000")
	if err != nil {
		return failf("%s: %v", path, err)
	}
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lo, err := engineOptions(path, dsn, sidecarDir)
	if err != nil {
		return failf("%s: the liveness files' directory: %v (or give --sidecar-dir)", path, err)
	}
	e, err := lease.Open(bctx, lo)
	if err == nil {
		defer e.Close()
	}
	var h *lease.HolderStatus
	if err == nil {
		h, err = e.BreakEpoch(bctx, scope, lane, want, force)
	}
	if err != nil && ctx.Err() == nil && bctx.Err() != nil {
		who := "a process"
		if holderPID > 0 {
			who = fmt.Sprintf("a process (the lane's holder is pid %d)", holderPID)
		}
		return failf("%s: SQLite's write lock stayed taken for %s: %s keeps a write transaction open; "+
			"a holder stopped or hung inside a transaction keeps it until it ends: end that process, then break again",
			path, timeout, who)
	}
	if errors.Is(err, lease.ErrEpochChanged) && h != nil {
		if explicit {
			return failf("refusing to break %s/%s: epoch %d is no longer active; holder %s (pid %d) holds it at epoch %d (break --epoch %d to break that one)",
				scope, lane, want, h.ID, h.PID, h.Epoch, h.Epoch)
		}
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s/%s: nothing broken: the holder seen at epoch %d has gone; holder %s (pid %d) took the lane since, at epoch %d",
			scope, lane, want, h.ID, h.PID, h.Epoch)))
		return nil
	}
	if errors.Is(err, lease.ErrHolderAlive) {
		return refuseAlive(scope, lane, h)
	}
	if err != nil {
		return leaseFailure(path, err)
	}
	if h == nil {
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s/%s: nothing broken: epoch %d is no longer active and the lane is free", scope, lane, want)))
		return nil
	}
	state := "dead"
	if h.Alive {
		state = "alive, forced"
	}
	fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("broke %s/%s: holder %s (pid %d, %s: %s) at epoch %d; the next grant gets a higher epoch",
		scope, lane, h.ID, h.PID, state, h.Why, h.Epoch)))
	return nil
}

// refuseAlive is the refusal to break the live holder h without --force.
func refuseAlive(scope, lane string, h *lease.HolderStatus) error {
	return failf("refusing to break %s/%s: holder %s (pid %d) is alive (%s); use --force if it is hung",
		scope, lane, h.ID, h.PID, h.Why)
}
