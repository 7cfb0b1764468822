package api

// Rebase returns a copy of c whose BaseDriver is base, every other field
// (explicit included) the same: how a base's package hands its Config to
// the driver core, and takes the core's Config back. nil stays nil.
func Rebase[D, E any](c *Config[D], base E) *Config[E] {
	if c == nil {
		return nil
	}
	return &Config[E]{
		SQLiteDSN:          c.SQLiteDSN,
		Mode:               c.Mode,
		Scope:              c.Scope,
		Lane:               c.Lane,
		TTL:                c.TTL,
		Wait:               c.Wait,
		Priority:           c.Priority,
		Slice:              c.Slice,
		Linger:             c.Linger,
		StealAfterTTL:      c.StealAfterTTL,
		NetworkFS:          c.NetworkFS,
		SidecarDir:         c.SidecarDir,
		Migrations:         c.Migrations,
		MigrationsTable:    c.MigrationsTable,
		MigrationsNoTxWrap: c.MigrationsNoTxWrap,
		MigrationsReplica:  c.MigrationsReplica,
		MigrationsFS:       c.MigrationsFS,
		Migrator:           c.Migrator,
		Logger:             c.Logger,
		Quiet:              c.Quiet,
		BaseDriver:         base,
		Clock:              c.Clock,
		explicit:           c.explicit,
	}
}
