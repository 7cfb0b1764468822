package api

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

// applyDefaults gives every zero field of a Config that did not come from
// NewConfig or ParseDSN (a literal) its default, and marks c explicit, so
// that applying it again changes nothing. A Config from NewConfig or
// ParseDSN is left as it is: its zeros were chosen.
func (c *Config[D]) applyDefaults() {
	if c.explicit {
		return
	}
	def := NewConfig[D]()
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
