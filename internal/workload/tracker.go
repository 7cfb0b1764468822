package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Tracker is the demo's task-tracker mix, on the schema of the demo's
// migrations (cmd/cleolease/migrations). Every transaction starts by
// reading its project's counters and writes them back changed
// (read-modify-write), and inserts one audit row (activity), so the data
// can be checked afterwards (VerifyTracker): projects.rev equals the
// project's audit rows, projects.open_tasks its open tasks,
// tasks.comment_count the task's comments, and the audit rows the commits
// the workers saw succeed.
type Tracker struct {
	projects []int64
	tags     []string
}

// LoadTracker reads the projects and tags the workload works on.
func LoadTracker(ctx context.Context, db *sql.DB) (*Tracker, error) {
	t := &Tracker{}
	rows, err := db.QueryContext(ctx, `SELECT id FROM projects ORDER BY id`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		t.projects = append(t.projects, id)
	}
	rows.Close()
	if len(t.projects) == 0 {
		return nil, errors.New("tracker workload: no projects")
	}
	rows, err = db.QueryContext(ctx, `SELECT name FROM tags ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		t.tags = append(t.tags, n)
	}
	if len(t.tags) == 0 {
		t.tags = []string{"none"}
	}
	return t, rows.Err()
}

// TrackerOps are the names of the Tracker's operations.
var TrackerOps = []string{"add task", "comment", "batch update"}

// Tx runs one transaction of the mix: 40 % add a task (INSERT …
// RETURNING), 35 % comment on a recent task, 25 % move up to 5 tasks on
// the board.
func (t *Tracker) Tx(ctx context.Context, db *sql.DB, s *State) (string, error) {
	p := t.projects[s.Rng.IntN(len(t.projects))]
	actor := fmt.Sprintf("worker-%d.%d", s.Worker, s.G)
	now := time.Now().UnixMilli()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	op, err := t.body(ctx, tx, s, p, actor, now)
	if err != nil {
		tx.Rollback()
		return "", err
	}
	return op, tx.Commit()
}

func (t *Tracker) body(ctx context.Context, tx *sql.Tx, s *State, p int64, actor string, now int64) (string, error) {
	var rev, open int64
	if err := tx.QueryRowContext(ctx, `SELECT rev, open_tasks FROM projects WHERE id = ?`, p).Scan(&rev, &open); err != nil {
		return "", err
	}
	s.Think()
	var op string
	var taskID sql.NullInt64
	switch r := s.Rng.IntN(100); {
	case r < 40: // a new task, its id from INSERT … RETURNING
		op = TrackerOps[0]
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO tasks (project_id, title, priority) VALUES (?, ?, ?) RETURNING id`,
			p, fmt.Sprintf("task by %s at %d", actor, now), 1+s.Rng.IntN(9)).Scan(&id); err != nil {
			return "", err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO task_tags (task_id, tag_id) SELECT ?, id FROM tags WHERE name = ?`,
			id, t.tags[s.Rng.IntN(len(t.tags))]); err != nil {
			return "", err
		}
		taskID = sql.NullInt64{Int64: id, Valid: true}
		open++
	case r < 75: // a comment on a recent task, and the task's counter
		op = TrackerOps[1]
		var id, n int64
		err := tx.QueryRowContext(ctx, `SELECT id, comment_count FROM tasks WHERE project_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?`,
			p, s.Rng.IntN(10)).Scan(&id, &n)
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, `SELECT id, comment_count FROM tasks WHERE project_id = ? ORDER BY id DESC LIMIT 1`, p).Scan(&id, &n)
		}
		if err != nil {
			return "", err
		}
		var cid, created int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO comments (task_id, author, body) VALUES (?, ?, ?) RETURNING id, created_at`,
			id, actor, "looks good to me").Scan(&cid, &created); err != nil {
			return "", err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET comment_count = ?, updated_at = ? WHERE id = ?`, n+1, created, id); err != nil {
			return "", err
		}
		taskID = sql.NullInt64{Int64: id, Valid: true}
	default: // batch update: move up to 5 tasks on the board
		op = TrackerOps[2]
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'done', updated_at = ? WHERE id IN
			(SELECT id FROM tasks WHERE project_id = ? AND status = 'doing' ORDER BY priority, id LIMIT 5)`, now/1000, p); err != nil {
			return "", err
		}
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'doing', updated_at = ? WHERE id IN
			(SELECT id FROM tasks WHERE project_id = ? AND status = 'open' ORDER BY priority, id LIMIT 5)`, now/1000, p)
		if err != nil {
			return "", err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return "", err
		}
		open -= k
	}
	if _, err := tx.ExecContext(ctx, `UPDATE projects SET rev = ?, open_tasks = ? WHERE id = ?`, rev+1, open, p); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO activity (project_id, task_id, actor, kind, at) VALUES (?, ?, ?, ?, ?)`,
		p, taskID, actor, op, now); err != nil {
		return "", err
	}
	return op, nil
}

// TrackerSchemaUsable reports whether the tables and columns the Tracker
// uses exist in db.
func TrackerSchemaUsable(ctx context.Context, db *sql.DB) bool {
	for _, q := range []string{
		`SELECT id, name, rev, open_tasks FROM projects LIMIT 0`,
		`SELECT id, project_id, title, status, priority, comment_count, updated_at FROM tasks LIMIT 0`,
		`SELECT id, task_id, author, body, created_at FROM comments LIMIT 0`,
		`SELECT id, name FROM tags LIMIT 0`,
		`SELECT task_id, tag_id FROM task_tags LIMIT 0`,
		`SELECT project_id, task_id, actor, kind, at FROM activity LIMIT 0`,
	} {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return false
		}
		rows.Close()
	}
	return true
}

// SeedTracker creates, with raw go-sqlite3, the projects and tasks the
// Tracker works on in the migrated database at path.
func SeedTracker(ctx context.Context, path string) error {
	dsn, err := FileURI(path, "_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, name := range []string{"website", "mobile app", "billing", "infrastructure"} {
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO projects (name, open_tasks) VALUES (?, 20) RETURNING id`, name).Scan(&id); err != nil {
			return err
		}
		for i := 1; i <= 20; i++ {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (project_id, title, priority) VALUES (?, ?, ?)`,
				id, fmt.Sprintf("%s: backlog item %d", name, i), 1+i%9); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// TrackerCheck is what the tracker's data says after a run.
type TrackerCheck struct {
	Acknowledged    int64  `json:"acknowledged_commits"` // commits the workers saw succeed
	AuditRows       int64  `json:"audit_rows"`
	RevMismatch     int64  `json:"rev_mismatch"`     // Σ |projects.rev − its audit rows|
	OpenMismatch    int64  `json:"open_mismatch"`    // Σ |projects.open_tasks − its open tasks|
	CommentMismatch int64  `json:"comment_mismatch"` // Σ |tasks.comment_count − its comments|
	LostUpdates     int64  `json:"lost_updates"`     // all of the above plus |audit rows − acknowledged|
	Integrity       string `json:"integrity"`        // PRAGMA quick_check
	FKViolations    int64  `json:"fk_violations"`
}

// VerifyTracker checks the tracker's data in db against itself and
// against acked, the commits the workers saw succeed. It only reads.
func VerifyTracker(ctx context.Context, db *sql.DB, acked int64) (TrackerCheck, error) {
	v := TrackerCheck{Acknowledged: acked}
	for _, q := range []struct {
		dst *int64
		sql string
	}{
		{&v.AuditRows, `SELECT count(*) FROM activity`},
		{&v.RevMismatch, `SELECT coalesce(sum(abs(p.rev - (SELECT count(*) FROM activity a WHERE a.project_id = p.id))), 0) FROM projects p`},
		{&v.OpenMismatch, `SELECT coalesce(sum(abs(p.open_tasks - (SELECT count(*) FROM tasks t WHERE t.project_id = p.id AND t.status = 'open'))), 0) FROM projects p`},
		{&v.CommentMismatch, `SELECT coalesce(sum(abs(t.comment_count - (SELECT count(*) FROM comments c WHERE c.task_id = t.id))), 0) FROM tasks t`},
		{&v.FKViolations, `SELECT count(*) FROM pragma_foreign_key_check`},
	} {
		if err := db.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return v, err
		}
	}
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&v.Integrity); err != nil {
		return v, err
	}
	v.LostUpdates = v.RevMismatch + v.OpenMismatch + v.CommentMismatch + abs(v.AuditRows-v.Acknowledged)
	return v, nil
}
