package migrate

import (
	"os"
	"strings"
)

// IsDirPath reports whether a migration source given as plain text — not
// a source URL (no "://") — names a directory: it contains a path
// separator ('/', or the operating system's) or starts with '.' (".",
// "./migrations", "../db/migrations", "/srv/app/migrations",
// "db/migrations"). Any other plain value ("app") is a name given to
// cleolease.RegisterMigrations in a program. The cleolease driver
// (_migrations) and the cleolease command (--source) both use this rule.
func IsDirPath(s string) bool {
	if strings.Contains(s, "://") {
		return false
	}
	return strings.HasPrefix(s, ".") || strings.ContainsRune(s, '/') || strings.ContainsRune(s, os.PathSeparator)
}
