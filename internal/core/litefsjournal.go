package core

import (
	"context"
	"log/slog"
)

// LiteFS takes cleolease in WAL mode only: in rollback-journal mode it is
// far slower (README, "Beyond one host"). A DSN that sets another journal
// mode for a database on a LiteFS mount is opened as given, with a
// warning at the first connect.

// warnLiteFSJournal logs a warning when the database is on a LiteFS
// mount and the DSN sets a journal mode other than WAL.
func (c *Connector) warnLiteFSJournal(ctx context.Context) {
	if m := c.dialect.JournalMode(c.cfg.SQLiteDSN); m != "" && m != "WAL" {
		c.log.LogAttrs(ctx, slog.LevelWarn, "cleolease: database on a LiteFS mount in rollback-journal mode: LiteFS is far slower there than in WAL mode (see the README, Beyond one host); remove _journal_mode to get WAL",
			slog.String("file", c.path), slog.String("journal_mode", m))
	}
}
