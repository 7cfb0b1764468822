package lease

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cleocode/cleolease/internal/platform"
)

// FuzzLeaseTables puts arbitrary rows in _writer_leases and _writer_queue
// — any column value: NULL, a wrong type, negative or huge numbers,
// garbage holder_start strings, this process's own identity — then lets an
// engine acquire s/l, inspect and close. Invariants:
//   - no panic;
//   - never two holders: at most one active row for s/l, before and after;
//   - Acquire either grants a row that is really this process's, with a
//     valid epoch above every epoch the lane had issued, fenced commits
//     passing; or fails with a clear error: ErrUntrusted for contents it
//     cannot trust, ErrUnavailable when a holder judged alive keeps the lane;
//   - after Close no active row names this process.
//
// permissive creates the tables without types or NOT NULL (as a tampered or
// foreign schema could), so NULLs and wrong types reach the engine.
//
//	go test ./lease -run '^$' -fuzz FuzzLeaseTables -fuzztime 2m
func FuzzLeaseTables(f *testing.F) {
	for _, s := range relFuzzSeeds() {
		f.Add(false, s)
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, permissive bool, data []byte) {
		relFuzzOne(t, permissive, data)
	})
}

// Columns in the order the decoder fills them.
var (
	relLeaseCols = []string{"id", "scope", "lane", "holder_id", "holder_pid", "epoch", "acquired_at", "heartbeat_at",
		"ttl_ms", "reentrancy_depth", "active", "holder_start", "holder_slot"}
	relQueueCols = []string{"ticket", "scope", "lane", "holder_id", "priority", "enqueued_at", "deadline_at",
		"holder_pid", "holder_start", "holder_slot", "ttl_ms", "arrival"}
)

// Value kinds of the encoding (one byte, then a payload).
const (
	kTypical = iota // a plausible value for the column (no payload)
	kNull
	kInt8    // 1 byte
	kInt64   // 8 bytes, big endian
	kFloat   // 8 bytes: float64 bits
	kText    // 1 length byte, then bytes
	kBlob    // 1 length byte, then bytes
	kSpecial // 1 byte: index into the column's special values
	kinds
)

type relBytes struct{ b []byte }

func (r *relBytes) next() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

func (r *relBytes) take(n int) []byte {
	if n > len(r.b) {
		n = len(r.b)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// relFuzzEnv is what special values refer to: this process's identity in
// the file about to be opened, and a few other interesting holders.
type relFuzzEnv struct {
	id, start string
	pid, slot int64
	now       int64
}

func (env relFuzzEnv) specials(col string) []any {
	otherBoot := "00000000-0000-0000-0000-000000000000/" + pidNamespace() + "/1/1"
	sameBootOtherNS := bootID() + "/pid:[1]/1"
	switch col {
	case "scope":
		return []any{"s", "S", "s\x00", "", "x"}
	case "lane":
		return []any{"l", "L", "l ", "", "y"}
	case "holder_id":
		return []any{env.id, "", "cl-other", env.id + " ", strings.ToUpper(env.id)}
	case "holder_pid", "priority", "arrival", "reentrancy_depth":
		return []any{env.pid, int64(1), int64(0), int64(-1), int64(1 << 22), int64(1<<22 + 1), int64(math.MaxInt64), int64(math.MinInt64), "1", 1.0}
	case "epoch":
		return []any{int64(1<<62 - 2), int64(1<<62 - 1), int64(1 << 62), int64(math.MaxInt64), int64(0), int64(-1), int64(math.MinInt64), "7", 7.5, "x"}
	case "acquired_at", "heartbeat_at", "enqueued_at", "deadline_at":
		return []any{env.now, env.now + 86400000, env.now - 86400000, int64(0), int64(math.MaxInt64), int64(math.MinInt64), -env.now, float64(env.now) + 0.5}
	case "ttl_ms":
		return []any{int64(0), int64(-1), int64(1), int64(math.MaxInt64), int64(math.MinInt64), int64(3600000)}
	case "active":
		return []any{int64(1), int64(0), int64(2), "1", 1.0, int64(-1), "active"}
	case "holder_start":
		return []any{env.start, procIdentity(), env.start + "/9", strings.TrimSuffix(env.start, "/1"), otherBoot, sameBootOtherNS,
			"", "/", "///", "a/b/c/d/e", bootID() + "/" + pidNamespace() + "/notanumber/0"}
	case "holder_slot":
		return []any{env.slot, int64(0), int64(-1), int64(1), int64(1 << 20), int64(1<<46 - 1), int64(1 << 62), int64(math.MaxInt64), int64(math.MinInt64), ticketOffset}
	case "id", "ticket":
		return []any{int64(1), int64(2), int64(math.MaxInt64), int64(-1), int64(0)}
	}
	return []any{nil}
}

func (env relFuzzEnv) typical(col string, row int) any {
	switch col {
	case "id", "ticket":
		return nil // let SQLite choose
	case "scope":
		return "s"
	case "lane":
		return "l"
	case "holder_id":
		return fmt.Sprintf("cl-fuzz-%d", row)
	case "holder_pid":
		return int64(4000000 + row) // no such pid
	case "epoch":
		return int64(row + 1)
	case "acquired_at", "heartbeat_at", "enqueued_at":
		return env.now
	case "deadline_at":
		return env.now + 30000
	case "ttl_ms":
		return int64(30000)
	case "reentrancy_depth", "active":
		return int64(1)
	case "priority":
		return int64(100)
	case "holder_start":
		return bootID() + "/" + pidNamespace() + "/1"
	case "holder_slot", "arrival":
		return int64(row + 1)
	}
	return nil
}

func (env relFuzzEnv) value(r *relBytes, col string, row int) any {
	k, ok := r.next()
	if !ok {
		return env.typical(col, row)
	}
	switch k % kinds {
	case kNull:
		return nil
	case kInt8:
		b, _ := r.next()
		return int64(int8(b))
	case kInt64:
		var b [8]byte
		copy(b[:], r.take(8))
		return int64(binary.BigEndian.Uint64(b[:]))
	case kFloat:
		var b [8]byte
		copy(b[:], r.take(8))
		return math.Float64frombits(binary.BigEndian.Uint64(b[:]))
	case kText, kBlob:
		n, _ := r.next()
		b := append([]byte(nil), r.take(int(n%64))...)
		if k%kinds == kText {
			return string(b)
		}
		return b
	case kSpecial:
		i, _ := r.next()
		sp := env.specials(col)
		return sp[int(i)%len(sp)]
	}
	return env.typical(col, row)
}

const relPermissiveDDL = `CREATE TABLE _writer_leases (id INTEGER PRIMARY KEY, scope, lane, holder_id, holder_pid, epoch,
	acquired_at, heartbeat_at, ttl_ms, reentrancy_depth, active, holder_start, holder_slot);
CREATE UNIQUE INDEX ux_writer_leases_active ON _writer_leases(scope, lane) WHERE active = 1;
CREATE TABLE _writer_queue (ticket INTEGER PRIMARY KEY AUTOINCREMENT, scope, lane, holder_id, priority,
	enqueued_at, deadline_at, holder_pid, holder_start, holder_slot, ttl_ms, arrival);
CREATE INDEX ix_writer_queue_order ON _writer_queue(scope, lane, priority ASC, ticket ASC);`

func relFuzzOne(t *testing.T, permissive bool, data []byte) {
	// Not t.TempDir: a fuzz subtest's name holds '#', which ends the path
	// of a file: URI.
	dir, err := os.MkdirTemp("", "cleolease-fuzz")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fuzz.db")
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=5000"
	raw, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	ddl := relPermissiveDDL
	if !permissive {
		ddl = strings.Join([]string{ddlLeases, ddlLeasesIndex, ddlQueue, ddlQueueIndex}, ";\n")
	}
	if _, err := raw.Exec(ddl + ";\nCREATE TABLE grants(id INTEGER PRIMARY KEY, who TEXT, epoch INTEGER)"); err != nil {
		t.Fatal(err)
	}
	// The sidecar exists before the engine opens it, so rows can name its
	// inode and this process's slot in it.
	side, err := os.OpenFile(path+"-cleolease", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	side.Close()
	st, _ := platform.Stat(path + "-cleolease")
	env := relFuzzEnv{
		id: processHolderID, pid: int64(os.Getpid()), slot: slotFor(processHolderID),
		start: procIdentity() + "/" + strconv.FormatUint(st.ID.Ino, 10), now: time.Now().UnixMilli(),
	}
	r := &relBytes{b: data}
	counts, _ := r.next()
	insert := func(table string, cols []string, row int) {
		vals := make([]any, len(cols))
		for i, c := range cols {
			vals[i] = env.value(r, c, row)
		}
		q := fmt.Sprintf("INSERT OR IGNORE INTO %s(%s) VALUES (?%s)", table, strings.Join(cols, ","), strings.Repeat(",?", len(cols)-1))
		raw.Exec(q, vals...) // constraint failures just skip the row
	}
	for i := 0; i < int(counts%5); i++ {
		insert("_writer_leases", relLeaseCols, i)
	}
	for i := 0; i < int(counts/5%5); i++ {
		insert("_writer_queue", relQueueCols, i)
	}
	activeRows := func() int {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if activeRows() > 1 {
		t.Fatal("the index let two active rows in")
	}
	// The highest integer epoch the lane has issued: a new grant must be
	// above it.
	var maxEpoch sql.NullInt64
	raw.QueryRow(`SELECT max(epoch) FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND typeof(epoch) = 'integer'`).Scan(&maxEpoch)
	// A row naming this process is adopted as handed over (a forger can
	// write one as well as the previous holder can): its epoch is kept.
	var adopted sql.NullInt64
	raw.QueryRow(`SELECT epoch FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1 AND holder_id = ? AND typeof(epoch) = 'integer'`, env.id).Scan(&adopted)

	ctx := context.Background()
	e, err := Open(ctx, Options{Base: testBase, Path: path, DSN: dsn, TTL: time.Hour, Linger: 0})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			e.Close()
		}
	}()
	e.Status(ctx) // must not panic; errors are fine
	h, err := e.Acquire(ctx, "s", "l", AcquireOptions{Wait: 10 * time.Millisecond, Require: true})
	switch {
	case err == nil:
		ep := h.Epoch()
		if ep <= 0 || ep >= 1<<62 {
			t.Fatalf("granted epoch %d out of range", ep)
		}
		if adopted.Valid && ep != adopted.Int64 {
			t.Fatalf("granted epoch %d, not the %d of the row that named this process", ep, adopted.Int64)
		}
		if !adopted.Valid && maxEpoch.Valid && ep <= maxEpoch.Int64 {
			t.Fatalf("granted epoch %d, not above the %d the lane had issued", ep, maxEpoch.Int64)
		}
		var id string
		var epoch any
		if err := raw.QueryRow(`SELECT holder_id, epoch FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1`).Scan(&id, &epoch); err != nil {
			t.Fatalf("granted epoch %d, but no active row: %v", ep, err)
		}
		if id != e.HolderID() || epoch != ep {
			t.Fatalf("granted epoch %d, but the active row is %q at %v (%T)", ep, id, epoch, epoch)
		}
		if err := h.Check(ctx); err != nil {
			t.Fatalf("Check of a fresh grant: %v", err)
		}
		if err := fencedWrite(ctx, raw, h, "fuzz"); err != nil {
			t.Fatalf("fenced write of a fresh grant: %v", err)
		}
		h.Release()
	case errors.Is(err, ErrUntrusted):
	case errors.Is(err, ErrUnavailable):
		rw, rerr := readActive(ctx, raw, "s", "l")
		if rerr != nil || rw == nil {
			t.Fatalf("ErrUnavailable, but the lane's row reads %v, %v", rw, rerr)
		}
		if v := e.probe(rw.h); v.dead() {
			t.Fatalf("ErrUnavailable behind a holder judged dead (%s): %v", v.reason, err)
		}
	default:
		t.Fatalf("Acquire: unexpected error %v", err)
	}
	if n := activeRows(); n > 1 {
		t.Fatalf("%d active rows after Acquire", n)
	}
	e.Status(ctx)
	e.Close()
	closed = true
	var mine int
	raw.QueryRow(`SELECT count(*) FROM _writer_leases WHERE scope = 's' AND lane = 'l' AND active = 1 AND holder_id = ?`, env.id).Scan(&mine)
	if mine != 0 && err == nil {
		t.Fatalf("%d active rows name this process after Close", mine)
	}
}

// relFuzzSeeds builds the seed corpus with the decoder's encoding.
func relFuzzSeeds() [][]byte {
	type v []byte
	typ := v{kTypical}
	null := v{kNull}
	sp := func(i byte) v { return v{kSpecial, i} }
	i64 := func(x int64) v {
		b := v{kInt64, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint64(b[1:], uint64(x))
		return b
	}
	text := func(s string) v { return append(v{kText, byte(len(s))}, s...) }
	row := func(vals ...v) []byte {
		var out []byte
		for _, x := range vals {
			out = append(out, x...)
		}
		return out
	}
	seed := func(leases, queue int, rows ...[]byte) []byte {
		out := []byte{byte(leases + 5*queue)}
		for _, r := range rows {
			out = append(out, r...)
		}
		return out
	}
	// Lease columns: id scope lane holder_id holder_pid epoch acquired_at
	// heartbeat_at ttl_ms reentrancy_depth active holder_start holder_slot.
	return [][]byte{
		seed(0, 0),
		seed(1, 0), // a dead holder (no such pid)
		seed(1, 0, row(typ, typ, typ, typ, sp(1))),          // pid 1: alive, keeps the lane
		seed(1, 0, row(typ, typ, typ, sp(0), typ, sp(4))),   // our id, epoch -1
		seed(1, 0, row(typ, typ, typ, sp(0), typ, sp(1))),   // our id, epoch 1<<62-1
		seed(1, 0, row(typ, typ, typ, typ, typ, text("x"))), // text epoch
		seed(1, 0, row(typ, typ, typ, typ, null)),           // NULL pid
		seed(2, 0, row(typ, typ, typ, typ, typ, i64(1000), typ, typ, typ, typ, sp(1)), row(typ, typ, typ, typ, typ, text("zzz"))),                            // text epoch above an inactive 1000
		seed(1, 0, row(typ, typ, typ, typ, sp(0), typ, typ, typ, typ, typ, typ, sp(0), sp(0))),                                                               // our pid, start and slot, another id
		seed(2, 0, row(typ, typ, typ, typ, typ, i64(1000), typ, typ, typ, typ, sp(1)), row(typ, typ, typ, typ, typ, text("zzz"), typ, typ, typ, typ, sp(1))), // released rows: epoch 1000 and a text epoch, which max() ranks above numbers
		seed(1, 0, row(typ, typ, typ, typ, typ, typ, typ, typ, typ, typ, typ, sp(8))),                                                                        // holder_start "/" pieces
		seed(1, 0, row(typ, typ, typ, typ, typ, sp(2))),                                                                                                      // epoch 1<<62: the next would overflow the range
		seed(1, 0, row(typ, typ, typ, typ, typ, typ, typ, typ, typ, typ, typ, sp(4))),                                                                        // another boot
		seed(0, 2, row(typ, typ, typ, sp(0)), row(typ, typ, typ, typ, typ, typ, typ, sp(1))),                                                                 // queue: our id, then pid 1
		seed(0, 1, row(typ, typ, typ, typ, text("hi"))),                                                                                                      // text priority
		seed(0, 1, row(typ, typ, typ, typ, typ, i64(math.MinInt64))),                                                                                         // enqueued_at at the minimum
		seed(1, 1, row(typ, typ, typ, typ, typ, typ, typ, typ, typ, typ, typ, null, null), row(typ, typ, typ, typ, typ, typ, typ, null, null, null, null, null)),
	}
}
