// Package compat holds cleolease's compatibility tests with database
// toolkits and ORMs (sqlx, GORM, bun). It is a separate module so that the
// core module does not depend on them; it has no API of its own. The tests
// show that unchanged client code works with the driver name "cleolease",
// with several processes writing to one SQLite file at once, and README.md
// carries the same snippets the examples run.
package compat
