package workload

import (
	"context"
	"database/sql"
	"time"

	"github.com/cleocode/cleolease/internal/sqlbase"
	"github.com/cleocode/cleolease/lease"
)

// Counter is the contention benchmark's transaction: read the counter, work
// (State.Think), write it back plus one, log the write. A lost update
// shows as a counter below the log's rows.
type Counter struct{}

// Tx runs one counter transaction.
func (Counter) Tx(ctx context.Context, db *sql.DB, s *State) (string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	var n int64
	err = tx.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n)
	if err == nil {
		s.Think()
		_, err = tx.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO log (proc, g, seen, at) VALUES (?, ?, ?, ?)`, s.Worker, s.G, n, time.Now().UnixNano())
	}
	if err != nil {
		tx.Rollback()
		return "", err
	}
	return "rmw", tx.Commit()
}

// CreateCounter creates a fresh counter database at path (WAL, with raw
// go-sqlite3, so that no peer's set-up is measured).
func CreateCounter(ctx context.Context, path string) error {
	return ExecRaw(ctx, path, "_journal_mode=WAL&_busy_timeout=5000", `CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
		INSERT INTO counter VALUES (1, 0);
		CREATE TABLE log (id INTEGER PRIMARY KEY, proc INTEGER, g INTEGER, seen INTEGER, at INTEGER)`)
}

// VerifyCounter reads the counter database at path without writing
// (lease.ReadOnly over base) and returns its lost updates: |counter − log rows| plus
// |log rows − acked|, where acked is the commits the workers saw succeed.
func VerifyCounter(ctx context.Context, base sqlbase.Base, path string, acked int64) (lost int64, err error) {
	var n, rows int64
	err = lease.ReadOnly(ctx, base, path, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT (SELECT n FROM counter WHERE id = 1), (SELECT count(*) FROM log)`).Scan(&n, &rows)
	})
	if err != nil {
		return 0, err
	}
	return abs(n-rows) + abs(rows-acked), nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
