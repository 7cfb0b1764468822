package lease

import (
	"context"
	"slices"
	"testing"
)

// TestOpenAddsTheColumnsTheOriginalTablesLack: a file whose lease tables
// were created by the original implementation (without holder_start,
// holder_slot, and the queue's holder_pid, holder_start, holder_slot,
// ttl_ms and arrival) gets each missing column at open, keeps its rows,
// and grants the lane at an epoch above the one it had.
func TestOpenAddsTheColumnsTheOriginalTablesLack(t *testing.T) {
	path := newDB(t)
	db := rawDB(t, path)
	if _, err := db.Exec(`CREATE TABLE _writer_leases (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, lane TEXT NOT NULL,
		holder_id TEXT NOT NULL, holder_pid INTEGER NOT NULL, epoch INTEGER NOT NULL, acquired_at INTEGER NOT NULL,
		heartbeat_at INTEGER NOT NULL, ttl_ms INTEGER NOT NULL, reentrancy_depth INTEGER NOT NULL DEFAULT 1, active INTEGER NOT NULL DEFAULT 1);
		CREATE UNIQUE INDEX ux_writer_leases_active ON _writer_leases(scope, lane) WHERE active = 1;
		CREATE TABLE _writer_queue (ticket INTEGER PRIMARY KEY, scope TEXT NOT NULL, lane TEXT NOT NULL, holder_id TEXT NOT NULL,
		priority INTEGER NOT NULL DEFAULT 100, enqueued_at INTEGER NOT NULL, deadline_at INTEGER NOT NULL);
		INSERT INTO _writer_leases (scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms, active)
		VALUES ('main', 'default', 'cl-old', 1, 41, 0, 0, 30000, 0)`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := readSchema(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !st.leases || !st.queue || !st.index || st.queueIndex || len(st.missingColumns) != len(addedColumns) {
		t.Fatalf("the original tables read as %+v; want both tables, the lease index, no queue index, every added column missing", st)
	}
	e := openEngine(t, path, nil)
	for _, table := range []string{"_writer_leases", "_writer_queue"} {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			cols = append(cols, c)
		}
		rows.Close()
		for _, c := range addedColumns {
			if c.table == table && !slices.Contains(cols, c.column) {
				t.Errorf("%s lacks %s after open: %v", table, c.column, cols)
			}
		}
	}
	if st, err := readSchema(ctx, db); err != nil || !st.complete() {
		t.Fatalf("after open the schema reads %+v, %v; want complete", st, err)
	}
	h, err := e.Acquire(ctx, "main", "default", AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if h.Epoch() <= 41 {
		t.Fatalf("granted at epoch %d, want above the file's 41", h.Epoch())
	}
}
