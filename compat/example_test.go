package compat_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jmoiron/sqlx"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	_ "github.com/cleocode/cleolease"
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
