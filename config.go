package cleolease

import "fmt"

// How a Config's fields get their defaults.
//
// A Config literal names only the fields its author cares about, so a field
// it leaves at its zero value takes the default (go-sql-driver/mysql's
// Config.normalize fills unset fields the same way). Four fields have a zero
// that means something — Wait (no wait), Priority (the best ordinary
// priority), Slice (strict FIFO) and Linger (no lingering) — and the
// explicit zero stays expressible by starting from NewConfig: a Config made
// by NewConfig or ParseDSN (or returned by Connector.Config) holds every
// value explicitly, so its zeros are kept, exactly as a DSN's
// "_lease_wait=0" is.

// ConfigError reports a Config field that NewConnector or OpenDB rejects:
// Field is the Config field's name ("TTL", "Lane", ...), Value the
// offending value as text (empty when the field is empty) and Reason why it
// is refused; for a nil *Config, Field and Value are empty. Problems inside Config.SQLiteDSN are reported as a *DSNError
// naming the DSN parameter, since that is what the caller wrote.
type ConfigError struct {
	Field  string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "cleolease: " + e.Reason
	}
	if e.Value == "" {
		return fmt.Sprintf("cleolease: Config.%s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("cleolease: Config.%s has bad value %q: %s", e.Field, e.Value, e.Reason)
}

// applyDefaults gives every zero field of a Config that did not come from
// NewConfig or ParseDSN (a literal) its default, and marks c explicit, so
// that applying it again changes nothing. A Config from NewConfig or
// ParseDSN is left as it is: its zeros were chosen.
func (c *Config) applyDefaults() {
	if c.explicit {
		return
	}
	def := NewConfig()
	if c.Mode == "" {
		c.Mode = def.Mode
	}
	if c.Scope == "" {
		c.Scope = def.Scope
	}
	if c.Lane == "" {
		c.Lane = def.Lane
	}
	if c.TTL == 0 {
		c.TTL = def.TTL
	}
	if c.Wait == 0 {
		c.Wait = def.Wait
	}
	if c.Priority == 0 {
		c.Priority = def.Priority
	}
	if c.Slice == 0 {
		c.Slice = def.Slice
	}
	if c.Linger == 0 {
		c.Linger = def.Linger
	}
	if c.NetworkFS == "" {
		c.NetworkFS = def.NetworkFS
	}
	if c.MigrationsTable == "" {
		c.MigrationsTable = def.MigrationsTable
	}
	if c.MigrationsReplica == "" {
		c.MigrationsReplica = def.MigrationsReplica
	}
	c.explicit = true
}
