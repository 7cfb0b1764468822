package glebareztest

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/cleocode/cleolease/internal/testdir"
	_ "github.com/cleocode/cleolease/modernc" // registers "cleolease-modernc"
	"github.com/cleocode/cleolease/writer"
)

type user struct {
	ID    uint   `gorm:"primaryKey"`
	Email string `gorm:"uniqueIndex"`
}

// The README's GORM program on glebarez/sqlite, the driver name changed to
// cleolease-modernc: it starts (the fork no longer registers "sqlite" a
// second time), migrates and writes under the lease, and the dialector
// translates cleolease-modernc's constraint errors as it translates the
// fork's (gorm.ErrDuplicatedKey).
func TestGORMOnGlebarezDialector(t *testing.T) {
	path := filepath.Join(testdir.New(t), "app.db")
	db, err := gorm.Open(sqlite.Dialector{DriverName: "cleolease-modernc", DSN: "file:" + path},
		&gorm.Config{TranslateError: true, Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	if err := db.AutoMigrate(&user{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&user{Email: "a@example.com"}).Error; err != nil {
		t.Fatal(err)
	}
	err = db.Create(&user{Email: "a@example.com"}).Error
	if !errors.Is(err, gorm.ErrDuplicatedKey) {
		t.Fatalf("a duplicate through the dialector: %v, want gorm.ErrDuplicatedKey", err)
	}
	var n int64
	if err := db.Model(&user{}).Count(&n).Error; err != nil || n != 1 {
		t.Fatalf("users: %d (%v), want 1", n, err)
	}
	st, err := writer.Status(context.Background(), sqlDB)
	if err != nil {
		t.Fatalf("writer.Status of GORM's pool: %v (the writes did not go through cleolease)", err)
	}
	if len(st) != 1 || st[0].Epoch < 1 {
		t.Fatalf("writer.Status: %+v, want the one lane the writes took, at an epoch", st)
	}
}

// The fork's own error type is modernc's, so code that inspects it (as the
// dialector's Translate does) sees cleolease-modernc's errors.
func TestForkErrorIsModerncs(t *testing.T) {
	path := filepath.Join(testdir.New(t), "e.db")
	db, err := gorm.Open(sqlite.Dialector{DriverName: "cleolease-modernc", DSN: "file:" + path}, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	_, err = sqlDB.Exec("SELEC 1")
	var e *gosqlite.Error
	if !errors.As(err, &e) || e.Code() != 1 {
		t.Fatalf("a syntax error: %v (%T), want a *go-sqlite.Error with code 1 (SQLITE_ERROR)", err, err)
	}
}
