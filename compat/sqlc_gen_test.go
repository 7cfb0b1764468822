package compat_test

// This file is what sqlc (https://sqlc.dev, engine "sqlite", package
// compat_test) generates for the schema and queries below — db.go,
// models.go and query.sql.go in one file — kept unchanged in shape: useSqlc
// (example_test.go) shows that sqlc's code needs nothing cleolease-specific.
//
//	-- schema.sql
//	CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
//
//	-- query.sql
//	-- name: CreateAuthor :one
//	INSERT INTO authors (name) VALUES (?) RETURNING id, name;
//	-- name: CountAuthors :one
//	SELECT count(*) FROM authors;

import (
	"context"
	"database/sql"
)

type DBTX interface {
	ExecContext(context.Context, string, ...interface{}) (sql.Result, error)
	PrepareContext(context.Context, string) (*sql.Stmt, error)
	QueryContext(context.Context, string, ...interface{}) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...interface{}) *sql.Row
}

func New(db DBTX) *Queries {
	return &Queries{db: db}
}

type Queries struct {
	db DBTX
}

func (q *Queries) WithTx(tx *sql.Tx) *Queries {
	return &Queries{
		db: tx,
	}
}

type Author struct {
	ID   int64
	Name string
}

const countAuthors = `-- name: CountAuthors :one
SELECT count(*) FROM authors
`

func (q *Queries) CountAuthors(ctx context.Context) (int64, error) {
	row := q.db.QueryRowContext(ctx, countAuthors)
	var count int64
	err := row.Scan(&count)
	return count, err
}

const createAuthor = `-- name: CreateAuthor :one
INSERT INTO authors (name) VALUES (?) RETURNING id, name
`

func (q *Queries) CreateAuthor(ctx context.Context, name string) (Author, error) {
	row := q.db.QueryRowContext(ctx, createAuthor, name)
	var i Author
	err := row.Scan(&i.ID, &i.Name)
	return i, err
}
