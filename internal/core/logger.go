package core

import (
	"context"
	"log/slog"
	"slices"
)

// Where cleolease's log records go, in one place: Config.Logger when set;
// nothing when Config.Quiet (_lease_quiet=true); otherwise warnings and
// errors (a degraded grant, a database on a FUSE or allowed network
// filesystem, a failed release) go to slog.Default(), as it is when each
// record is logged, and debug and info records are dropped. That is Go's
// convention for a library: the program decides where warnings land (by
// default, standard error), and a program that configured nothing still
// hears that a write went ahead without the lease.

// newLogger returns the logger the connector, its lease engine and its
// migrations log through, following the rule above. It is never nil.
func newLogger(cfg *Config) *slog.Logger {
	switch {
	case cfg.Quiet:
		return slog.New(slog.DiscardHandler)
	case cfg.Logger != nil:
		return cfg.Logger
	}
	return slog.New(defaultWarnings{})
}

// defaultWarnings is a slog.Handler that passes records at warning level
// and above to the handler of slog.Default() at the moment each record is
// logged (so a program may call slog.SetDefault after opening the
// database), applying the attributes and groups it was given on the way.
type defaultWarnings struct {
	with []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

func (h defaultWarnings) target() slog.Handler {
	t := slog.Default().Handler()
	for _, w := range h.with {
		t = w(t)
	}
	return t
}

// Enabled reports levels from slog.LevelWarn up that slog.Default() takes.
func (h defaultWarnings) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && slog.Default().Handler().Enabled(ctx, level)
}

// Handle passes r to slog.Default()'s handler.
func (h defaultWarnings) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	return h.target().Handle(ctx, r)
}

// WithAttrs returns a handler adding attrs to every record passed on.
func (h defaultWarnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return defaultWarnings{with: append(slices.Clip(h.with), func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })}
}

// WithGroup returns a handler putting later attributes in group name.
func (h defaultWarnings) WithGroup(name string) slog.Handler {
	return defaultWarnings{with: append(slices.Clip(h.with), func(t slog.Handler) slog.Handler { return t.WithGroup(name) })}
}
