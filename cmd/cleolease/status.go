package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cleocode/cleolease"
	"github.com/cleocode/cleolease/lease"
	"github.com/cleocode/cleolease/migrate"
)

// statusReport is `cleolease status --json`.
type statusReport struct {
	Path       string             `json:"path"`
	At         time.Time          `json:"at"`
	Migrations migrationState     `json:"migrations"`
	Lanes      []lease.LaneStatus `json:"lanes"`
	// Reason says why Lanes is empty when the file has no lease tables
	// (a plain SQLite file no process has opened with cleolease).
	Reason string `json:"reason,omitempty"`
}

func newStatusCmd() *cobra.Command {
	var (
		asJSON bool
		watch  time.Duration
		table  string
	)
	cmd := &cobra.Command{
		Use:   "status DB",
		Short: "Show holders, queues and the migration version of a database (read-only)",
		Long: `status shows, for each (scope, lane) of DB: the holder (id, pid, alive or
dead and the evidence), the epoch, how long it has held the lane, the age of
its heartbeat and its re-entrancy depth; the waiters in grant order with
their pids, priorities, places and wait times; and golang-migrate's version
and dirty flag.

A waiter writes its queue row only once SQLite's write lock is free: while
the holder is inside a write transaction, a waiter has only registered with
the holder (over the doorbell, a datagram). status asks each live holder for
those registrations, so every waiter is listed whatever the holder is doing
("via holder" rather than "via queue"). A holder that cannot answer (stopped,
or built without a doorbell: cleolease_pollwake, Windows) leaves its waiters
counted from their locks on the sidecar but unnamed, with a note saying why.

status writes nothing to the database or the sidecar: it opens DB read-only
(mode=ro), never creates the lease tables or the sidecar, and judges
liveness by testing the holders' locks on the sidecar without taking any.
To hear the holders' answers it listens on a socket of its own: an abstract
one on Linux (no file), a socket file in the lock directory (removed before
it exits) in the portable tier.

DB is a file path, not a DSN. On a plain SQLite file (no lease tables yet)
status fails, except with --json, which prints an empty lane list and the
reason.`,
		Example: `  cleolease status app.db
  cleolease status app.db --json | jq '.lanes[].holder'
  cleolease status app.db --watch          # refresh every second
  cleolease status app.db --watch 250ms`,
		Args: oneDB,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if watch < 0 {
				return usagef("--watch must not be negative")
			}
			if !migrate.ValidTableName(table) {
				return usagef("--table %q is not a plain SQL identifier", table)
			}
			return runStatus(cmd.Context(), cmd.OutOrStdout(), args[0], table, asJSON, watch)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON (one object per refresh) for scripts")
	f.DurationVar(&watch, "watch", 0, "refresh every interval until interrupted (alone: every 1s)")
	f.Lookup("watch").NoOptDefVal = "1s"
	f.StringVar(&table, "table", cleolease.DefaultMigrationsTable, "golang-migrate version table")
	return cmd
}

func runStatus(ctx context.Context, w io.Writer, path, table string, asJSON bool, watch time.Duration) error {
	clear := watch > 0 && !asJSON && isTerminal(w)
	for {
		rep := statusReport{Path: path}
		err := readOnly(ctx, path, func(db *sql.DB) error {
			ok, err := leaseTables(ctx, db)
			if err != nil {
				return sqliteFailure(path, err)
			}
			if !ok && !asJSON {
				return requireLeaseTables(ctx, db, path)
			}
			rep.At = time.Now()
			if rep.Migrations, err = readMigrationState(ctx, db, table); err != nil {
				return sqliteFailure(path, err)
			}
			if !ok {
				// --json: an answer a script can parse, not an error.
				rep.Lanes, rep.Reason = []lease.LaneStatus{}, noLeaseTables
				return nil
			}
			if rep.Lanes, err = inspectDB(ctx, db, path, rep.At); err != nil {
				return sqliteFailure(path, err)
			}
			if rep.Lanes == nil {
				rep.Lanes = []lease.LaneStatus{}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(w)
			if watch == 0 {
				enc.SetIndent("", "  ")
			}
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			if clear {
				fmt.Fprint(w, "\033[H\033[2J")
			}
			printStatus(w, rep)
		}
		if watch == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: a normal end of --watch
		case <-time.After(watch):
		}
		if !asJSON && !clear {
			fmt.Fprintln(w)
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newTable(w io.Writer, header ...any) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header...)
	return t
}

func aliveText(alive bool, why string) string {
	if alive {
		return "alive (" + why + ")"
	}
	return "DEAD (" + why + ")"
}

func printStatus(w io.Writer, rep statusReport) {
	fmt.Fprintf(w, "%s at %s\n", rep.Path, rep.At.Format("2006-01-02 15:04:05.000"))
	fmt.Fprintf(w, "migrations (%s): %s\n", rep.Migrations.Table, rep.Migrations)
	if len(rep.Lanes) == 0 {
		fmt.Fprintln(w, "lanes: none (no process has taken a lease yet)")
		return
	}
	fmt.Fprintln(w)
	t := newTable(w, "scope/lane", "epoch", "holder", "pid", "state", "held for", "heartbeat age", "depth", "waiters")
	for _, l := range rep.Lanes {
		row := []string{l.Scope + "/" + l.Lane, strconv.FormatInt(l.Epoch, 10)}
		if h := l.Holder; h != nil {
			hb := fmtAge(h.Heartbeat)
			if h.TTL > 0 && h.Heartbeat > h.TTL {
				hb += fmt.Sprintf(" (> ttl %s: hung?)", fmtAge(h.TTL))
			}
			row = append(row, shortID(h.ID), strconv.FormatInt(h.PID, 10), aliveText(h.Alive, h.Why),
				fmtAge(h.HeldFor), hb, strconv.FormatInt(h.Depth, 10))
		} else {
			row = append(row, "(free)", "", "", "", "", "")
		}
		waiters := strconv.Itoa(len(l.Waiters))
		if l.Unnamed > 0 {
			// Waiting processes no holder could name (see the note).
			waiters += fmt.Sprintf(" (+%d unnamed)", l.Unnamed)
		}
		row = append(row, waiters)
		t.Append(row)
	}
	t.Render()
	for _, l := range rep.Lanes {
		if len(l.Waiters) > 0 {
			fmt.Fprintf(w, "\nqueue of %s/%s, in grant order:\n", l.Scope, l.Lane)
			q := newTable(w, "#", "ticket", "waiter", "pid", "priority", "waiting", "via", "state")
			for _, x := range l.Waiters {
				place, ticket := "?", "-"
				if x.Place > 0 {
					place = strconv.Itoa(x.Place)
				}
				if x.Ticket > 0 {
					ticket = strconv.FormatInt(x.Ticket, 10)
				}
				q.Append([]string{place, ticket, shortID(x.ID), strconv.FormatInt(x.PID, 10),
					strconv.FormatInt(x.Priority, 10), fmtAge(x.Waited), x.Source, aliveText(x.Alive, x.Why)})
			}
			q.Render()
		}
		if l.Note != "" {
			fmt.Fprintf(w, "\nnote on %s/%s: %s\n", l.Scope, l.Lane, l.Note)
		}
	}
}
