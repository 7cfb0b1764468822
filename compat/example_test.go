package compat_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	"entgo.io/ent/schema/field"
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	"github.com/cleocode/cleolease"
)

// The functions named use* below are copied verbatim into README.md (a test
// keeps the two in step); the Example functions run them.

func useSqlx(path string) error {
	db, err := sqlx.Open("cleolease", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()

	db.MustExec(`CREATE TABLE IF NOT EXISTS people (
		id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, visits INTEGER NOT NULL DEFAULT 0)`)
	type person struct {
		ID     int64  `db:"id"`
		Name   string `db:"name"`
		Visits int    `db:"visits"`
	}
	if _, err := db.NamedExec(`INSERT INTO people (name) VALUES (:name)`,
		[]person{{Name: "ada"}, {Name: "grace"}}); err != nil {
		return err
	}

	// A deferred transaction that reads, then writes: no "database is
	// locked" however many processes run it at once.
	tx, err := db.Beginx()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var visits int
	if err := tx.Get(&visits, `SELECT visits FROM people WHERE name = ?`, "ada"); err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE people SET visits = ? WHERE name = ?`, visits+1, "ada"); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	var people []person
	if err := db.Select(&people, `SELECT * FROM people ORDER BY id`); err != nil {
		return err
	}
	fmt.Println(people)
	return nil
}

type Product struct {
	ID    uint   `gorm:"primaryKey"`
	Code  string `gorm:"uniqueIndex"`
	Price uint
}

func useGorm(path string) error {
	db, err := gorm.Open(sqlite.Dialector{DriverName: "cleolease", DSN: "file:" + path},
		&gorm.Config{TranslateError: true})
	if err != nil {
		return err
	}
	if err := db.AutoMigrate(&Product{}); err != nil {
		return err
	}

	p := Product{Code: "D42", Price: 100}
	if err := db.Create(&p).Error; err != nil {
		return err
	}
	p.Price = 200
	if err := db.Save(&p).Error; err != nil {
		return err
	}
	// SQLite's errors come back unchanged, so TranslateError still works.
	if err := db.Create(&Product{Code: "D42"}).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("want gorm.ErrDuplicatedKey, got %v", err)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		var q Product
		if err := tx.First(&q, "code = ?", "D42").Error; err != nil {
			return err
		}
		return tx.Model(&q).Update("price", q.Price+1).Error
	})
	if err != nil {
		return err
	}
	if err := db.First(&p, p.ID).Error; err != nil {
		return err
	}
	fmt.Println(p.Code, p.Price)
	return db.Delete(&p).Error
}

type Book struct {
	bun.BaseModel `bun:"table:books"`

	ID    int64 `bun:",pk,autoincrement"`
	Title string
	Reads int `bun:",notnull"`
}

func useBun(ctx context.Context, path string) error {
	sqldb, err := sql.Open("cleolease", "file:"+path)
	if err != nil {
		return err
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	if _, err := db.NewCreateTable().Model((*Book)(nil)).IfNotExists().Exec(ctx); err != nil {
		return err
	}
	b := Book{Title: "SQLite"}
	if _, err := db.NewInsert().Model(&b).Exec(ctx); err != nil { // b.ID from RETURNING
		return err
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(&b).WherePK().Scan(ctx); err != nil {
			return err
		}
		b.Reads++
		_, err := tx.NewUpdate().Model(&b).WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Println(b.ID, b.Title, b.Reads)
	return nil
}

func useEnt(ctx context.Context, path string) error {
	// Schema changes run at the first open, under the cold-open lease: one
	// process at a time, so ent applies each change once. With ent's
	// generated code the function is
	//   ent.NewClient(ent.Driver(entsql.OpenDB(dialect.SQLite, db))).Schema.Create(ctx)
	// which runs what the next lines run for the tables of ent/migrate.
	cols := []*schema.Column{
		{Name: "id", Type: field.TypeInt, Increment: true},
		{Name: "name", Type: field.TypeString},
	}
	users := &schema.Table{Name: "users", Columns: cols, PrimaryKey: cols[:1]}
	cleolease.RegisterMigrator("ent-app", cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		m, err := schema.NewMigrate(entsql.OpenDB(dialect.SQLite, db))
		if err != nil {
			return err
		}
		return m.Create(ctx, users)
	}))

	db, err := sql.Open("cleolease", "file:"+path+"?_migrations=ent-app")
	if err != nil {
		return err
	}
	defer db.Close()
	// Not ent.Open("cleolease", …): ent accepts only driver names it knows.
	drv := entsql.OpenDB(dialect.SQLite, db) // client := ent.NewClient(ent.Driver(drv))
	tx, err := drv.Tx(ctx)
	if err != nil {
		return err
	}
	if err := tx.Exec(ctx, `INSERT INTO users (name) VALUES (?)`, []any{"ada"}, nil); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	var rows entsql.Rows
	if err := drv.Query(ctx, `SELECT count(*) FROM users`, []any{}, &rows); err != nil {
		return err
	}
	defer rows.Close()
	n, err := entsql.ScanInt(rows)
	if err != nil {
		return err
	}
	fmt.Println("users:", n)
	return nil
}

func useGoose(ctx context.Context, path string, migrations fs.FS) error {
	// goose.Up runs at the first open, under the cold-open lease: one
	// process at a time, so each migration is applied once.
	cleolease.RegisterMigrator("goose-app", cleolease.MigratorFunc(func(ctx context.Context, db *sql.DB) error {
		goose.SetBaseFS(migrations)
		if err := goose.SetDialect("sqlite3"); err != nil {
			return err
		}
		return goose.UpContext(ctx, db, ".")
		// or: p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations); then p.Up(ctx)
	}))

	// Not goose.OpenDBWithDriver("cleolease", …): goose takes the driver
	// name for its dialect. Open with database/sql and name the dialect.
	db, err := sql.Open("cleolease", "file:"+path+"?_migrations=goose-app")
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := goose.GetDBVersionContext(ctx, db)
	if err != nil {
		return err
	}
	fmt.Println("goose version:", v)
	return nil
}

func useSqlc(ctx context.Context, path string) error {
	db, err := sql.Open("cleolease", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS authors (
		id INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return err
	}

	// sqlc's generated code, unchanged. CreateAuthor's INSERT … RETURNING
	// goes through QueryRowContext: leased, and committed before it returns.
	q := New(db)
	a, err := q.CreateAuthor(ctx, "ada")
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := q.WithTx(tx).CreateAuthor(ctx, "grace"); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	n, err := q.CountAuthors(ctx)
	if err != nil {
		return err
	}
	fmt.Println(a.ID, a.Name, n)
	return nil
}

// exampleFile returns a database path in a new temporary directory and a
// function removing it.
func exampleFile() (string, func()) {
	dir, err := os.MkdirTemp("", "cleolease-compat-example")
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "app.db"), func() { os.RemoveAll(dir) }
}

func Example_sqlx() {
	path, cleanup := exampleFile()
	defer cleanup()
	if err := useSqlx(path); err != nil {
		fmt.Println(err)
	}
	// Output: [{1 ada 1} {2 grace 0}]
}

func Example_gorm() {
	path, cleanup := exampleFile()
	defer cleanup()
	if err := useGorm(path); err != nil {
		fmt.Println(err)
	}
	// Output: D42 201
}

func Example_bun() {
	path, cleanup := exampleFile()
	defer cleanup()
	if err := useBun(context.Background(), path); err != nil {
		fmt.Println(err)
	}
	// Output: 1 SQLite 1
}

func Example_ent() {
	path, cleanup := exampleFile()
	defer cleanup()
	if err := useEnt(context.Background(), path); err != nil {
		fmt.Println(err)
	}
	// Output: users: 1
}

func Example_goose() {
	path, cleanup := exampleFile()
	defer cleanup()
	goose.SetLogger(goose.NopLogger())
	if err := useGoose(context.Background(), path, gooseFS); err != nil {
		fmt.Println(err)
	}
	// Output: goose version: 2
}

func Example_sqlc() {
	path, cleanup := exampleFile()
	defer cleanup()
	if err := useSqlc(context.Background(), path); err != nil {
		fmt.Println(err)
	}
	// Output: 1 ada 2
}
