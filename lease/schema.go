package lease

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
)

// The lease tables live in the database file itself, so that the fencing
// check is atomic with the data. Names, columns and units (milliseconds
// since the Unix epoch) are the original implementation's; holder_start, holder_slot, and on the queue
// holder_pid, ttl_ms and arrival (the waiter's place in line, taken from
// the sidecar's counter when it arrived) are cleolease's additions, all
// nullable, so a file shared with the original stays mutually exclusive.
//
// _writer_queue's ticket is a plain INTEGER PRIMARY KEY, not AUTOINCREMENT
// as in the original's migration: AUTOINCREMENT creates sqlite_sequence,
// which SQLite never lets anyone drop, so tools that drop every table (such
// as golang-migrate's Drop) would fail on a file only because of the lease
// tables. A new row still gets a ticket above every row present (SQLite's
// max(rowid) + 1), which is all the order needs: a ticket is only ever
// used in the transaction that read it (see head and dropTicket).
// Files that already have the table keep it as it is.
const (
	ddlLeases = `CREATE TABLE IF NOT EXISTS main._writer_leases (
	id INTEGER PRIMARY KEY,
	scope TEXT NOT NULL,
	lane TEXT NOT NULL,
	holder_id TEXT NOT NULL,
	holder_pid INTEGER NOT NULL,
	epoch INTEGER NOT NULL,
	acquired_at INTEGER NOT NULL,
	heartbeat_at INTEGER NOT NULL,
	ttl_ms INTEGER NOT NULL,
	reentrancy_depth INTEGER NOT NULL DEFAULT 1,
	active INTEGER NOT NULL DEFAULT 1,
	holder_start TEXT,
	holder_slot INTEGER
)`
	ddlLeasesIndex = `CREATE UNIQUE INDEX IF NOT EXISTS main.ux_writer_leases_active ON _writer_leases(scope, lane) WHERE active = 1`
	ddlQueue       = `CREATE TABLE IF NOT EXISTS main._writer_queue (
	ticket INTEGER PRIMARY KEY,
	scope TEXT NOT NULL,
	lane TEXT NOT NULL,
	holder_id TEXT NOT NULL,
	priority INTEGER NOT NULL DEFAULT 100,
	enqueued_at INTEGER NOT NULL,
	deadline_at INTEGER NOT NULL,
	holder_pid INTEGER,
	holder_start TEXT,
	holder_slot INTEGER,
	ttl_ms INTEGER,
	arrival INTEGER
)`
	ddlQueueIndex = `CREATE INDEX IF NOT EXISTS main.ix_writer_queue_order ON _writer_queue(scope, lane, priority ASC, ticket ASC)`
)

// An application that exports every table and imports the rows again
// (into a fresh file, or into the same file after dropping its schema)
// brings lease rows of another file or another time with it. They must
// not fail its import, nor stand in for this file's lease: an imported
// row that collides with a row this file holds now (the same id, or a
// second active row of a lane) is skipped (RAISE(IGNORE): the INSERT goes
// on with its next row and succeeds). A row that collides with none is
// taken in, as a restore brings rows back (see "Backups and exports" in
// the README). The engine's and the original implementation's inserts
// never meet the condition: they let SQLite choose the id (NEW.id is -1
// in a BEFORE trigger then) and insert an active row only inside the
// BEGIN IMMEDIATE transaction that found the lane without one; an active
// row's unique index (ux_writer_leases_active) stays the exclusion for
// every other write.
const (
	ddlLeasesImport = `CREATE TRIGGER IF NOT EXISTS main.tx_writer_leases_import BEFORE INSERT ON _writer_leases
	WHEN (NEW.id > 0 AND EXISTS (SELECT 1 FROM main._writer_leases WHERE id = NEW.id))
	OR (NEW.active = 1 AND EXISTS (SELECT 1 FROM main._writer_leases WHERE scope = NEW.scope AND lane = NEW.lane AND active = 1))
BEGIN SELECT RAISE(IGNORE); END`
	ddlQueueImport = `CREATE TRIGGER IF NOT EXISTS main.tx_writer_queue_import BEFORE INSERT ON _writer_queue
	WHEN NEW.ticket > 0 AND EXISTS (SELECT 1 FROM main._writer_queue WHERE ticket = NEW.ticket)
BEGIN SELECT RAISE(IGNORE); END`
)

// Columns cleolease adds to tables the original implementation created.
var addedColumns = []struct{ table, column, decl string }{
	{"_writer_leases", "holder_start", "TEXT"},
	{"_writer_leases", "holder_slot", "INTEGER"},
	{"_writer_queue", "holder_pid", "INTEGER"},
	{"_writer_queue", "holder_start", "TEXT"},
	{"_writer_queue", "holder_slot", "INTEGER"},
	{"_writer_queue", "ttl_ms", "INTEGER"},
	{"_writer_queue", "arrival", "INTEGER"},
}

// schemaState is what sqlite_master and table_info say about the tables.
type schemaState struct {
	leases, queue, index, queueIndex bool
	sidecar                          bool // _writer_sidecar
	leasesImport, queueImport        bool // the triggers that skip an import's colliding rows
	sidecarImport                    bool
	missingColumns                   []int                      // indexes into addedColumns
	cols                             map[string]map[string]bool // table: its columns (saw)
}

func (s schemaState) complete() bool {
	return s.leases && s.queue && s.index && s.queueIndex && s.sidecar &&
		s.leasesImport && s.queueImport && s.sidecarImport && len(s.missingColumns) == 0
}

// leaseObjects are the names of the lease tables, their indexes and
// triggers, as schemaObjectsSQL and schemaAsCreatedSQL list them.
const leaseObjects = `('_writer_leases','_writer_queue','_writer_sidecar','ux_writer_leases_active','ix_writer_queue_order',` +
	`'tx_writer_leases_import','tx_writer_queue_import','tx_writer_sidecar_import')`

// The schema read names nothing a user's object can shadow: the schema
// table as main.sqlite_master (no user object may be named sqlite_*),
// each table's columns with the statement PRAGMA main.table_info, not the
// table-valued pragma_table_info, which a table or view of that name in
// TEMP, main or an attached database would stand in for.

// schemaObjectsSQL reads a row per lease table or index present: its type
// and name.
const schemaObjectsSQL = `SELECT type, name FROM main.sqlite_master WHERE name IN ` + leaseObjects

// tableInfoSQL is the statement that lists the columns of lease table
// name (one of the two constant names: no quoting needed).
func tableInfoSQL(name string) string { return "PRAGMA main.table_info(" + name + ")" }

// readSchema reads the lease objects and the lease tables' columns
// through q.
func readSchema(ctx context.Context, q querier) (schemaState, error) {
	return readSchemaVia(ctx, func(query string, n int, row func([]string)) error {
		rows, err := q.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		out := make([]string, n)
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			for i := range out {
				out[i] = vals[i].String
			}
			row(out)
		}
		return rows.Err()
	})
}

// readSchemaVia reads the lease objects (schemaObjectsSQL) and, for each
// lease table present, its column names (tableInfoSQL: column 1), through
// each, which runs query and calls row with the first n columns of every
// row as text.
func readSchemaVia(ctx context.Context, each func(query string, n int, row func([]string)) error) (schemaState, error) {
	var s schemaState
	type object struct{ typ, name string }
	var objects []object
	if err := each(schemaObjectsSQL, 2, func(v []string) { objects = append(objects, object{v[0], v[1]}) }); err != nil {
		return s, err
	}
	for _, o := range objects {
		var names []string
		if o.typ == "table" && o.name != "_writer_sidecar" { // its columns: readSidecarRecord
			err := each(tableInfoSQL(o.name), 2, func(v []string) { names = append(names, v[1]) })
			if err != nil {
				return s, err
			}
		}
		s.saw(o.typ, o.name, strings.Join(names, ","))
	}
	s.settle()
	return s, nil
}

// SchemaReady reports whether the lease tables, their indexes and every
// column cleolease adds are all present, as q — a connection the caller
// opened on the file with the base, not through cleolease — sees them
// now. Open given Options.TablesReady then skips its own read of them.
// err is the base's error for the read (the caller then opens the engine
// the usual way, which reads them again).
func SchemaReady(ctx context.Context, q driver.QueryerContext) (bool, error) {
	if ready, err := schemaAsCreated(ctx, q); ready || err != nil {
		return ready, err
	}
	s, err := readSchemaVia(ctx, func(query string, n int, row func([]string)) error {
		return eachText(ctx, q, query, n, func(v []string) bool { row(v); return true })
	})
	if err != nil {
		return false, err
	}
	return s.complete(), nil
}

// eachText runs query on q and calls row with the first n columns of
// each row as text (TEXT or NULL: "") until it returns false.
func eachText(ctx context.Context, q driver.QueryerContext, query string, n int, row func([]string) bool) error {
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	out := make([]string, n)
	for {
		err := rows.Next(dest)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range out {
			out[i], _ = textValue(dest[i])
		}
		if !row(out) {
			return nil
		}
	}
}

// schemaAsCreatedSQL reads the lease objects' entries in sqlite_master,
// with the CREATE statement SQLite keeps for each.
const schemaAsCreatedSQL = `SELECT type, name, sql FROM main.sqlite_master WHERE name IN ` + leaseObjects

// createdTables are the CREATE TABLE statements SQLite keeps in
// sqlite_master for the lease tables this version creates (ddlLeases,
// ddlQueue): it stores "CREATE TABLE " and the text from the table's
// name on, without "IF NOT EXISTS" and the schema name. ALTER TABLE ADD
// COLUMN rewrites the stored text, so a table created by another
// implementation or version never matches.
var createdTables = map[string]string{
	"_writer_leases": "CREATE TABLE " + strings.TrimPrefix(ddlLeases, "CREATE TABLE IF NOT EXISTS main."),
	"_writer_queue":  "CREATE TABLE " + strings.TrimPrefix(ddlQueue, "CREATE TABLE IF NOT EXISTS main."),
}

// schemaAsCreated reports whether the lease tables are exactly as this
// version creates them (createdTables) and the sidecar table, both
// indexes and the three triggers are present: then
// every column is, without asking SQLite for each table's columns — a
// PRAGMA main.table_info per table, the dearer part of SchemaReady's read on
// a connection's first statement. false says only that the tables are
// not as created here; SchemaReady then reads their columns.
func schemaAsCreated(ctx context.Context, q driver.QueryerContext) (bool, error) {
	seen, other := 0, false
	err := eachText(ctx, q, schemaAsCreatedSQL, 3, func(v []string) bool {
		typ, name, text := v[0], v[1], v[2]
		switch want, table := createdTables[name]; {
		case table && typ == "table" && text == want, !table && name == "_writer_sidecar" && typ == "table",
			!table && strings.HasPrefix(name, "tx_") && typ == "trigger", !table && typ == "index":
			seen++
			return true
		}
		other = true
		return false
	})
	return err == nil && !other && seen == 8, err
}

// textValue is v as a string, from the string or []byte a base returns
// for TEXT.
func textValue(v driver.Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}

// saw records one lease object: its type, its name and, for a table, its
// column names, comma-separated.
func (s *schemaState) saw(typ, name, columns string) {
	switch name {
	case "_writer_leases":
		s.leases = typ == "table"
	case "_writer_queue":
		s.queue = typ == "table"
	case "ux_writer_leases_active":
		s.index = typ == "index"
	case "ix_writer_queue_order":
		s.queueIndex = typ == "index"
	case "_writer_sidecar":
		s.sidecar = typ == "table"
	case "tx_writer_leases_import":
		s.leasesImport = typ == "trigger"
	case "tx_writer_queue_import":
		s.queueImport = typ == "trigger"
	case "tx_writer_sidecar_import":
		s.sidecarImport = typ == "trigger"
	}
	if typ == "table" {
		if s.cols == nil {
			s.cols = map[string]map[string]bool{}
		}
		s.cols[name] = map[string]bool{}
		for _, c := range strings.Split(columns, ",") {
			s.cols[name][c] = true
		}
	}
}

// settle lists the added columns the tables present lack, once every row
// was seen.
func (s *schemaState) settle() {
	for i, c := range addedColumns {
		if (c.table == "_writer_leases" && !s.leases) || (c.table == "_writer_queue" && !s.queue) {
			continue
		}
		if !s.cols[c.table][c.column] {
			s.missingColumns = append(s.missingColumns, i)
		}
	}
}

// querier is the part of *sql.Conn / *sql.DB the engine reads through.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// bootstrap creates the lease tables when they are missing, idempotently
// and safely when several processes do it at once (each step runs inside
// one BEGIN IMMEDIATE and re-reads the schema first). An existing
// _writer_leases without its partial unique index is never repaired
// silently: that is ErrIndexMissing.
func (e *Engine) bootstrap(ctx context.Context) error {
	var s schemaState
	err := e.retryBusy(ctx, func() (err error) {
		s, err = readSchema(ctx, e.db())
		return err
	})
	if err != nil {
		return err
	}
	if s.complete() {
		return nil
	}
	if s.leases && !s.index {
		return e.errf("open", "", "", ErrIndexMissing, "drop detected; recreate it with: "+ddlLeasesIndex)
	}
	return e.immediateOp(ctx, "bootstrap", func(ctx context.Context, c *sql.Conn) error {
		s, err := readSchema(ctx, c)
		if err != nil {
			return err
		}
		if s.leases && !s.index {
			return e.errf("open", "", "", ErrIndexMissing, "drop detected; recreate it with: "+ddlLeasesIndex)
		}
		var stmts []string
		if !s.leases {
			stmts = append(stmts, ddlLeases, ddlLeasesIndex)
		}
		if !s.queue {
			stmts = append(stmts, ddlQueue)
		}
		if !s.queueIndex {
			stmts = append(stmts, ddlQueueIndex)
		}
		if !s.sidecar {
			stmts = append(stmts, ddlSidecar)
		}
		if !s.leasesImport {
			stmts = append(stmts, ddlLeasesImport)
		}
		if !s.queueImport {
			stmts = append(stmts, ddlQueueImport)
		}
		if !s.sidecarImport {
			stmts = append(stmts, ddlSidecarImport)
		}
		for _, i := range s.missingColumns {
			col := addedColumns[i]
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE main.%s ADD COLUMN %s %s", col.table, col.column, col.decl))
		}
		for _, q := range stmts {
			if _, err := c.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}
