package cleolease

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
)

// LiteFS takes cleolease in WAL mode only: in rollback-journal mode it is
// far slower (README, "Beyond one host"). A DSN that sets another journal
// mode for a database on a LiteFS mount is opened as given, with a
// warning at the first connect.

// journalModeGiven returns the journal mode the DSN sets (_journal_mode
// or its alias _journal), upper-cased, or "" when it sets none.
func (c *Config) journalModeGiven() string {
	_, query, ok := strings.Cut(c.SQLiteDSN, "?")
	if !ok {
		return ""
	}
	q, _ := url.ParseQuery(query)
	for _, k := range []string{"_journal_mode", "_journal"} {
		if v, ok := q[k]; ok && len(v) > 0 {
			return strings.ToUpper(v[0])
		}
	}
	return ""
}

// warnLiteFSJournal logs a warning when the database is on a LiteFS
// mount and the DSN sets a journal mode other than WAL.
func (c *Connector) warnLiteFSJournal(ctx context.Context) {
	if m := c.cfg.journalModeGiven(); m != "" && m != "WAL" {
		c.log.LogAttrs(ctx, slog.LevelWarn, "cleolease: database on a LiteFS mount in rollback-journal mode: LiteFS is far slower there than in WAL mode (see the README, Beyond one host); remove _journal_mode to get WAL",
			slog.String("file", c.path), slog.String("journal_mode", m))
	}
}
