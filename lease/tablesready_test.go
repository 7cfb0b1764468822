package lease

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"
)

// schemaReadyOn is SchemaReady through a connection of a plain go-sqlite3
// pool of path.
func schemaReadyOn(t *testing.T, path string) bool {
	t.Helper()
	return schemaReadOn(t, path, SchemaReady)
}

// schemaReadOn is read (SchemaReady or schemaAsCreated) through a
// connection of a plain go-sqlite3 pool of path.
func schemaReadOn(t *testing.T, path string, read func(context.Context, driver.QueryerContext) (bool, error)) bool {
	t.Helper()
	ctx := context.Background()
	c, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ready bool
	err = c.Raw(func(dc any) error {
		var err error
		ready, err = read(ctx, dc.(driver.QueryerContext))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ready
}

// TestSchemaReadyNeedsEveryTableIndexAndColumn: SchemaReady is true only
// once the engine's tables, both indexes and every column cleolease adds
// are there — not on a new file, nor on the original implementation's
// tables (which lack the added columns and the queue's index).
func TestSchemaReadyNeedsEveryTableIndexAndColumn(t *testing.T) {
	path := newDB(t)
	if schemaReadyOn(t, path) {
		t.Fatal("ready on a file without lease tables")
	}
	if _, err := rawDB(t, path).Exec(`CREATE TABLE _writer_leases (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, lane TEXT NOT NULL,
		holder_id TEXT NOT NULL, holder_pid INTEGER NOT NULL, epoch INTEGER NOT NULL, acquired_at INTEGER NOT NULL,
		heartbeat_at INTEGER NOT NULL, ttl_ms INTEGER NOT NULL, reentrancy_depth INTEGER NOT NULL DEFAULT 1, active INTEGER NOT NULL DEFAULT 1);
		CREATE UNIQUE INDEX ux_writer_leases_active ON _writer_leases(scope, lane) WHERE active = 1;
		CREATE TABLE _writer_queue (ticket INTEGER PRIMARY KEY, scope TEXT NOT NULL, lane TEXT NOT NULL, holder_id TEXT NOT NULL,
		priority INTEGER NOT NULL DEFAULT 100, enqueued_at INTEGER NOT NULL, deadline_at INTEGER NOT NULL);
		CREATE INDEX ix_writer_queue_order ON _writer_queue(scope, lane, priority ASC, ticket ASC)`); err != nil {
		t.Fatal(err)
	}
	if schemaReadyOn(t, path) {
		t.Fatal("ready on the original implementation's tables, which lack cleolease's columns")
	}
	openEngine(t, path, nil).Close()
	if !schemaReadyOn(t, path) {
		t.Fatal("not ready after an engine opened the file (it adds the missing columns)")
	}
}

// TestTablesReadyOpensNoConnectionUntilTheFirstLease: given TablesReady,
// Open opens no connection of its own; the first Acquire opens it, and
// runs first the sweep Open would have run: a row that names this process
// in a lane it never used (a restored file's, here written by hand) is
// released before the lane it asks for is claimed.
func TestTablesReadyOpensNoConnectionUntilTheFirstLease(t *testing.T) {
	ctx := context.Background()
	path := newDB(t)
	openEngine(t, path, nil).Close() // the tables
	if !schemaReadyOn(t, path) {
		t.Fatal("tables not ready after an engine opened the file")
	}
	e := openEngine(t, path, func(o *Options) { o.TablesReady = true })
	if gen, _ := e.conn.pin(); gen != 0 {
		t.Fatalf("Open with TablesReady opened or closed %d connections; want none", gen)
	}
	db := rawDB(t, path)
	now := time.Now().UnixMilli()
	if _, err := db.Exec(`INSERT INTO _writer_leases (scope, lane, holder_id, holder_pid, epoch, acquired_at, heartbeat_at, ttl_ms, active, holder_start, holder_slot)
		VALUES ('s', 'restored', ?, ?, 7, ?, ?, 3600000, 1, ?, ?)`, e.holderID, e.pid, now, now, e.start, slotFor(e.holderID)); err != nil {
		t.Fatal(err)
	}
	h, err := e.Acquire(ctx, "s", "asked", req)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if gen, open := e.conn.pin(); gen != 1 || !open {
		t.Fatalf("after the first Acquire the engine has opened %d connections (one open: %v); want its one", gen, open)
	}
	var active int
	if err := db.QueryRow(`SELECT active FROM _writer_leases WHERE lane = 'restored'`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 0 {
		t.Fatal("the row naming this process in a lane it never used is still active after the first Acquire: not swept")
	}
}

// TestSchemaAsCreatedOnlyForThisVersionsTables: the quick read answers for
// the tables an engine of this version creates (so a connection's first
// statement is not the column read), and not for tables that another
// implementation created and an engine completed, nor with an index
// missing — where SchemaReady reads the columns, or says not ready.
func TestSchemaAsCreatedOnlyForThisVersionsTables(t *testing.T) {
	asCreated := func(path string) bool {
		t.Helper()
		return schemaReadOn(t, path, schemaAsCreated)
	}
	fresh := newDB(t)
	openEngine(t, fresh, nil).Close()
	if !asCreated(fresh) {
		t.Fatal("this version's tables are not recognised as created by it: every connection pays the column read")
	}
	if _, err := rawDB(t, fresh).Exec(`DROP INDEX ix_writer_queue_order`); err != nil {
		t.Fatal(err)
	}
	if asCreated(fresh) || schemaReadyOn(t, fresh) {
		t.Fatal("ready with the queue's index dropped")
	}

	original := newDB(t)
	if _, err := rawDB(t, original).Exec(`CREATE TABLE _writer_leases (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, lane TEXT NOT NULL,
		holder_id TEXT NOT NULL, holder_pid INTEGER NOT NULL, epoch INTEGER NOT NULL, acquired_at INTEGER NOT NULL,
		heartbeat_at INTEGER NOT NULL, ttl_ms INTEGER NOT NULL, reentrancy_depth INTEGER NOT NULL DEFAULT 1, active INTEGER NOT NULL DEFAULT 1);
		CREATE UNIQUE INDEX ux_writer_leases_active ON _writer_leases(scope, lane) WHERE active = 1`); err != nil {
		t.Fatal(err)
	}
	openEngine(t, original, nil).Close() // adds the columns and the queue
	if asCreated(original) {
		t.Fatal("another implementation's table, completed by ALTER TABLE, taken for this version's")
	}
	if !schemaReadyOn(t, original) {
		t.Fatal("not ready after an engine completed another implementation's tables")
	}
}
