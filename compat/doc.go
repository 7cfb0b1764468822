// Package compat holds cleolease's compatibility tests with database
// toolkits, ORMs and migration tools (sqlx, GORM, bun, ent, goose, sqlc).
// It is a separate module so that the core module does not depend on them;
// it has no API of its own. The tests show that unchanged client code works
// with the driver name "cleolease", with several processes writing to one
// SQLite file at once, that ent's and goose's migrations run once across
// processes as a cleolease.Migrator, that README.md carries the same
// snippets the examples run, and that every Go snippet of the repository's
// documentation (its READMEs, docs/ and package docs) compiles, and runs
// where it is a program (TestDocSnippets).
package compat
