package cleolease

// EffectiveSQLiteDSN returns the DSN go-sqlite3 receives for a cleolease
// DSN: the caller's go-sqlite3 parameters plus cleolease's defaults. The
// differential tests open raw go-sqlite3 with it.
func EffectiveSQLiteDSN(dsn string) (string, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	return sqliteDSNWithDefaults(cfg), nil
}

// EffectiveReadOnlySQLiteDSN returns the DSN a connection that SQLite
// opens read-only ends up with: EffectiveSQLiteDSN without the
// journal-mode default (readonly.go).
func EffectiveReadOnlySQLiteDSN(dsn string) (string, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	return sqliteDSN(cfg, false), nil
}
