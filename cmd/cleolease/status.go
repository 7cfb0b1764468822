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
		asJSON     bool
		watch      time.Duration
		table      string
		sidecarDir string
	)
	cmd := &cobra.Command{
		Use:   "status DB",
		Short: "Show holders, queues and the migration version of a database (read-only)",
		Long: `status shows, for each (scope, lane) of DB: the epoch; the holder (its id, pid,
alive or dead and the evidence, how long it has held the lane, its re-entrancy
depth and the age of its heartbeat); how many processes wait; the waiters in
grant order with their pids, priorities and wait times; and golang-migrate's
version and dirty flag.

A waiter writes its queue row only once SQLite's write lock is free: while
the holder is inside a write transaction, a waiter has only registered with
the holder (over the doorbell, a datagram). status asks each live holder for
those registrations, so every waiter is listed whatever the holder is doing
("registered with the holder" rather than a "queue row"). A holder that
cannot answer (stopped, or built without a doorbell: cleolease_pollwake,
Windows) leaves its waiters counted from their locks on the sidecar but
unnamed, with a note saying why.

status writes nothing to the database or the sidecar: it opens DB read-only
(mode=ro), never creates the lease tables or the sidecar, and judges
liveness by testing the holders' locks on the sidecar without taking any.
To hear the holders' answers it listens on a socket of its own: an abstract
one on Linux (no file), a socket file in the lock directory (removed before
it exits) in the portable tier.

DB is a file path, not a DSN. On a plain SQLite file (no lease tables yet)
status fails, except with --json, which prints an empty lane list and the
reason.

--json prints one object per refresh (durations, *_ns, in nanoseconds):
  path, at        DB and the time of the reading
  migrations      table; present (the table exists); version (absent when
                  none is recorded); dirty
  lanes[]         scope, lane; epoch (the highest issued: the fencing token
                  of the latest grant)
    holder        absent when the lane is free: id, pid, alive, liveness
                  ("alive", "dead" or "unknown": the OS would not tell), why
                  (the evidence), epoch, held_for_ns, heartbeat_age_ns, ttl_ns,
                  depth
    waiters[]     in grant order: ticket (0: registered with the holder, no
                  queue row yet), id, pid, priority (lower is served first),
                  since, waited_ns, place (1 is served next; absent while some
                  waiters are unnamed), source ("queue" or "holder"), alive,
                  liveness, why
    waiting       how many processes wait, named or not: the text's "waiting"
                  (dead processes' queue rows are listed in waiters, not
                  counted); -1 where the platform keeps no liveness locks
    unnamed       how many waiting processes waiters does not name
    note          why some are unnamed
  reason          why lanes is empty (a file without lease tables)`,
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
			return runStatus(cmd.Context(), cmd.OutOrStdout(), args[0], sidecarDirFor(args[0], sidecarDir), table, asJSON, watch)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON (one object per refresh) for scripts")
	f.DurationVar(&watch, "watch", 0, "refresh every interval until interrupted (alone: every 1s)")
	f.Lookup("watch").NoOptDefVal = "1s"
	f.StringVar(&table, "table", cleolease.DefaultMigrationsTable, "golang-migrate version table")
	f.StringVar(&sidecarDir, "sidecar-dir", "", "the directory the processes keep their liveness files in (their DSN's _lease_sidecar_dir; on a LiteFS mount, by default, the one they derive there)")
	return cmd
}

func runStatus(ctx context.Context, w io.Writer, path, sidecarDir, table string, asJSON bool, watch time.Duration) error {
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
			if rep.Lanes, err = inspectDB(ctx, db, path, sidecarDir, rep.At); err != nil {
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

func aliveText(alive bool, liveness, why string) string {
	switch {
	case alive:
		return "alive (" + why + ")"
	case liveness == "unknown":
		return "alive or dead: UNKNOWN (" + why + ")"
	}
	return "DEAD (" + why + ")"
}

// printStatus writes rep as a block per lane, each fact on its own line
// (wrapped to width): the lane and its epoch, its holder, how many
// processes wait and the waiters in grant order, and a note on waiters it
// cannot name. Ids are never cut.
func printStatus(w io.Writer, rep statusReport) {
	fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("%s at %s", rep.Path, rep.At.Format("2006-01-02 15:04:05.000"))))
	fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("migrations (%s): %s", rep.Migrations.Table, rep.Migrations)))
	if len(rep.Lanes) == 0 {
		fmt.Fprintln(w, "lanes: none (no process has taken a lease yet)")
		return
	}
	const (
		label = "  %-9s" // a field's name, then its first line
		more  = "           "
	)
	field := func(name, text string) { fmt.Fprintln(w, wrap(fmt.Sprintf(label, name), more, text)) }
	for _, l := range rep.Lanes {
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap("", "  ", fmt.Sprintf("lane %s/%s, epoch %d", l.Scope, l.Lane, l.Epoch)))
		if h := l.Holder; h != nil {
			field("holder", fmt.Sprintf("%s pid %d", h.ID, h.PID))
			fmt.Fprintln(w, wrap(more, more, aliveText(h.Alive, h.Liveness, h.Why)))
			hb := fmtAge(h.Heartbeat) + " ago"
			if h.TTL > 0 {
				hb += fmt.Sprintf(" (ttl %s)", fmtAge(h.TTL))
				if h.Heartbeat > h.TTL {
					hb = fmt.Sprintf("%s ago: more than its ttl %s, hung?", fmtAge(h.Heartbeat), fmtAge(h.TTL))
				}
			}
			fmt.Fprintln(w, wrap(more, more, fmt.Sprintf("held for %s, depth %d, heartbeat %s", fmtAge(h.HeldFor), h.Depth, hb)))
		} else {
			field("holder", "none (free)")
		}
		field("waiting", waitingText(l))
		if len(l.Waiters) > 0 {
			order := "in grant order (1 is served next):"
			if l.Unnamed > 0 {
				order = "the ones named, in the order they would be served among themselves:"
			}
			field("queue", order)
			for i, x := range l.Waiters {
				place := "-"
				if x.Place > 0 {
					place = strconv.Itoa(x.Place) + "."
				} else if l.Unnamed == 0 {
					place = strconv.Itoa(i+1) + "."
				}
				first := fmt.Sprintf("    %-3s ", place)
				fmt.Fprintln(w, wrap(first, "        ", fmt.Sprintf("%s pid %d, priority %d", x.ID, x.PID, x.Priority)))
				via := "no queue row yet (registered with the holder)"
				if x.Source != "holder" {
					via = fmt.Sprintf("ticket %d (queue row)", x.Ticket)
				}
				fmt.Fprintln(w, wrap("        ", "        ", fmt.Sprintf("waiting %s, %s, %s", fmtAge(x.Waited), via, aliveText(x.Alive, x.Liveness, x.Why))))
			}
		}
		if l.Note != "" {
			field("note", l.Note)
		}
	}
}

// waitingText is how many processes wait for the lane: LaneStatus.Waiting,
// the "waiting" of --json, and how many of them are not named.
func waitingText(l lease.LaneStatus) string {
	if l.Waiting < 0 {
		return "not counted: this platform keeps no liveness locks"
	}
	s := fmt.Sprintf("%d processes", l.Waiting)
	if l.Waiting == 1 {
		s = "1 process"
	}
	if l.Unnamed > 0 {
		s += fmt.Sprintf(", %d of them not named (see the note)", l.Unnamed)
	}
	return s
}
