package core

// Migrations on a LiteFS replica: they cannot run there (the replica
// refuses writes), so a process whose migrations are ahead of the
// replica's copy either opens it as it is, with a warning, or waits for
// the primary to migrate (_migrations_replica).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cleocode/cleolease/migrate"
)

// migrationsOnReplica is what the cold open does when its run failed with
// err (opts: the run's options; source: golang-migrate migrations are
// configured). An err that is not a replica's refusal (replicaError) comes
// back unchanged. On a replica, with ReplicaOpen it logs a warning naming
// the file, the primary, the database's version and the source's newest,
// and returns nil: the connect succeeds, reads work, writes fail with the
// *ReplicaError. With ReplicaWait it reads the version again until no
// migration is pending (the primary migrated and LiteFS brought it over),
// then returns nil, or returns the context's error, wrapped, when ctx ends
// first. A Migrator cannot be waited for (it has no version): it is
// skipped with the warning.
func (c *Connector) migrationsOnReplica(ctx context.Context, err error, opts migrate.Options, source bool) error {
	rerr := c.replicaError(err)
	var re *ReplicaError
	if !errors.As(rerr, &re) {
		return err
	}
	opts.Engine = nil // reads only
	st := migrate.Status{}
	var verr error
	if source {
		st, verr = migrate.Version(ctx, opts)
	}
	if source && verr == nil && c.cfg.MigrationsReplica == ReplicaWait {
		c.log.LogAttrs(ctx, slog.LevelInfo, "cleolease: LiteFS replica behind the migrations: waiting for the primary's",
			slog.String("file", c.path), slog.String("primary", re.Primary), slog.Int("database_version", st.Version), slog.Int("source_version", st.Latest))
		wait := time.Millisecond
		for verr == nil && st.Pending > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("cleolease: waiting on LiteFS replica %s for the primary (%s) to migrate from version %d to %d: %w", c.path, re.Primary, st.Version, st.Latest, ctx.Err())
			case <-t.C:
			}
			wait = min(2*wait, 250*time.Millisecond)
			st, verr = migrate.Version(ctx, opts)
		}
		if verr == nil && c.migrator() == nil {
			return nil
		}
	}
	attrs := []slog.Attr{slog.String("file", c.path), slog.String("primary", re.Primary)}
	switch {
	case verr != nil:
		attrs = append(attrs, slog.String("err", verr.Error()))
	case source:
		attrs = append(attrs, slog.Int("database_version", st.Version), slog.Int("source_version", st.Latest), slog.Int("pending", st.Pending))
	}
	if c.migrator() != nil {
		attrs = append(attrs, slog.Bool("migrator_skipped", true))
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "cleolease: LiteFS replica: pending migrations cannot run here (writes go to the primary); opened as it is", attrs...)
	return nil
}
