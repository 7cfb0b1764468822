package compat_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Item is a GORM model with a unique column, so that TranslateError has a
// UNIQUE violation to translate.
type Item struct {
	ID      uint   `gorm:"primaryKey"`
	Code    string `gorm:"uniqueIndex;not null"`
	PID     int
	Worker  int
	Seq     int
	Name    string
	Version int
}

// Counter is a row every process increments in a GORM Transaction.
type Counter struct {
	Name string `gorm:"primaryKey"`
	N    int
}

// Tag is migrated by every child at once, inside a Transaction, while the
// others write.
type Tag struct {
	ID   uint   `gorm:"primaryKey"`
	Name string `gorm:"uniqueIndex"`
}

// openGorm is how an application opens GORM on cleolease: the sqlite
// dialector with DriverName set; nothing else changes.
func openGorm(driver, dsn string, opts ...func(*gorm.Config)) (*gorm.DB, error) {
	cfg := &gorm.Config{TranslateError: true, Logger: logger.Discard}
	for _, o := range opts {
		o(cfg)
	}
	return gorm.Open(sqlite.Dialector{DriverName: driver, DSN: dsn}, cfg)
}

// prepareStmt turns on GORM's prepared-statement cache.
func prepareStmt(c *gorm.Config) { c.PrepareStmt = true }

func init() { roles["gorm"] = gormChild }

// gormChild is plain GORM code. It migrates (the tables already exist, so
// AutoMigrate only inspects them, while the other processes write), then
// each worker races every other worker of every process to create the same
// unique Code (exactly one wins; the others must get gorm.ErrDuplicatedKey)
// and runs N iterations of Create, Save, Delete (every third item) and a
// Transaction that increments the shared counter. Odd iterations create
// with SkipDefaultTransaction, so that GORM's INSERT … RETURNING runs as an
// autocommit query instead of inside GORM's own transaction. Odd-numbered
// children run with PrepareStmt (GORM's prepared-statement cache).
func gormChild(ctx context.Context, a childArgs) (report, error) {
	var r report
	var opts []func(*gorm.Config)
	if a.Index%2 == 1 {
		opts = append(opts, prepareStmt)
	}
	db, err := openGorm(a.Driver, a.DSN, opts...)
	if err != nil {
		return r, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return r, err
	}
	defer sqlDB.Close()
	if err := ready(); err != nil {
		return r, err
	}
	db = db.WithContext(ctx)
	if err := db.AutoMigrate(&Item{}, &Counter{}); err != nil {
		r.fail("AutoMigrate", err)
	}
	// A table none exists yet, migrated by every process at once: inside a
	// Transaction the check and the CREATE run under one lease, so exactly
	// one process creates it and the others find it.
	if err := db.Transaction(func(tx *gorm.DB) error { return tx.AutoMigrate(&Tag{}) }); err != nil {
		r.fail("AutoMigrate in Transaction", err)
	}
	pid := os.Getpid()
	ops := make([]report, a.Workers)
	runWorkers(a, func(w int) {
		r := &ops[w]
		skip := db.Session(&gorm.Session{SkipDefaultTransaction: true})
		// Every worker of every process creates the same Code: one wins.
		cdb := db
		if w%2 == 1 {
			cdb = skip
		}
		switch err := cdb.Create(&Item{Code: "shared", PID: pid, Worker: w}).Error; {
		case err == nil:
			r.add("shared-won")
		case errors.Is(err, gorm.ErrDuplicatedKey):
			r.add("shared-duplicate")
		default:
			r.fail("Create shared", fmt.Errorf("want nil or gorm.ErrDuplicatedKey, got %T %w", err, err))
		}
		// And its own Code twice, through both paths.
		for i, d := range []*gorm.DB{db, skip} {
			code := fmt.Sprintf("own-p%d-w%d-%d", pid, w, i)
			if err := d.Create(&Item{Code: code, PID: pid, Worker: w, Seq: -1}).Error; err != nil {
				r.fail("Create own", err)
			}
			if err := d.Create(&Item{Code: code, PID: pid, Worker: w, Seq: -1}).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
				r.fail("Create own duplicate", fmt.Errorf("want gorm.ErrDuplicatedKey, got %T %v", err, err))
			} else {
				r.add("own-duplicate")
			}
		}

		for seq := range a.N {
			cdb := db
			if seq%2 == 1 {
				cdb = skip
			}
			it := Item{Code: fmt.Sprintf("p%d-w%d-s%d", pid, w, seq), PID: pid, Worker: w, Seq: seq, Name: "created"}
			if err := cdb.Create(&it).Error; err != nil {
				r.fail("Create", err)
				continue
			}
			if it.ID == 0 {
				r.fail("Create", errors.New("no ID came back from INSERT … RETURNING"))
				continue
			}
			r.add("create")
			it.Name, it.Version = "saved", it.Version+1
			if err := db.Save(&it).Error; err != nil {
				r.fail("Save", err)
			} else {
				r.add("save")
			}
			if seq%3 == 0 {
				if res := db.Delete(&it); res.Error != nil {
					r.fail("Delete", res.Error)
				} else if res.RowsAffected != 1 {
					r.fail("Delete", fmt.Errorf("deleted %d rows, want 1", res.RowsAffected))
				} else {
					r.add("delete")
				}
			}
			err := db.Transaction(func(tx *gorm.DB) error {
				var c Counter
				if err := tx.First(&c, "name = ?", "total").Error; err != nil {
					return err
				}
				c.N++
				return tx.Save(&c).Error
			})
			if err != nil {
				r.fail("Transaction", err)
			} else {
				r.add("increment")
			}
		}
	})
	for _, o := range ops {
		r.merge(o)
	}
	r.collectLease(ctx, a, sqlDB)
	return r, nil
}

// TestGormMultiProcess: 4 processes × 2 goroutines of unchanged GORM code
// (AutoMigrate, Create, Save, Delete, Transaction, TranslateError) on one
// file: no errors, exact counts, and the UNIQUE race translated to
// gorm.ErrDuplicatedKey everywhere but in its one winner.
func TestGormMultiProcess(t *testing.T) {
	t.Parallel()
	_, dsn := tempDSN(t)
	db, err := openGorm("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	if err := db.AutoMigrate(&Item{}, &Counter{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&Counter{Name: "total"}).Error; err != nil {
		t.Fatal(err)
	}

	r := runProcs(t, "gorm", childArgs{DSN: dsn, Procs: 4, Workers: 2, N: 30})
	r.requireClean(t)
	// Per iteration: Create, Save, the Transaction, and Delete every third.
	r.requireLeased(t, 3*r.args.Workers*r.args.N)

	a := r.args
	workers := a.Procs * a.Workers
	deletedPerWorker := (a.N + 2) / 3
	for op, want := range map[string]int{
		"shared-won":       1,
		"shared-duplicate": workers - 1,
		"own-duplicate":    2 * workers,
		"create":           workers * a.N,
		"save":             workers * a.N,
		"delete":           workers * deletedPerWorker,
		"increment":        workers * a.N,
	} {
		if got := r.total(op); got != want {
			t.Errorf("children report %d %s, want %d", got, op, want)
		}
	}

	var items []Item
	if err := db.Where("seq >= 0 AND code <> ?", "shared").Order("id").Find(&items).Error; err != nil {
		t.Fatal(err)
	}
	if want := workers * (a.N - deletedPerWorker); len(items) != want {
		t.Errorf("%d items left, want %d", len(items), want)
	}
	for _, it := range items {
		if it.Name != "saved" || it.Version != 1 || it.Seq%3 == 0 {
			t.Errorf("item %+v: want saved once and not a deleted one", it)
		}
	}
	var shared, own int64
	db.Model(&Item{}).Where("code = ?", "shared").Count(&shared)
	db.Model(&Item{}).Where("seq = -1").Count(&own)
	if shared != 1 || own != int64(2*workers) {
		t.Errorf("%d shared and %d own unique rows, want 1 and %d", shared, own, 2*workers)
	}
	var c Counter
	if err := db.First(&c, "name = ?", "total").Error; err != nil {
		t.Fatal(err)
	}
	if c.N != workers*a.N {
		t.Errorf("counter = %d, want %d", c.N, workers*a.N)
	}
	if !db.Migrator().HasTable(&Tag{}) {
		t.Error("no tags table after every child migrated it")
	}
	owners := make([]int, len(items))
	for i, it := range items {
		owners[i] = it.PID
	}
	requireInterleaved(t, r, owners)
}

// Owner and Pet carry a foreign key (GORM creates the constraint; the
// cleolease DSN defaults turn foreign keys on).
type Owner struct {
	ID uint `gorm:"primaryKey"`
}

type Pet struct {
	ID      uint `gorm:"primaryKey"`
	OwnerID uint
	Owner   Owner
}

// TestGormTranslateError: with TranslateError, a UNIQUE violation through
// cleolease is gorm.ErrDuplicatedKey and a foreign-key violation
// gorm.ErrForeignKeyViolated: inside GORM's default transaction, as an
// autocommit INSERT … RETURNING (SkipDefaultTransaction), inside
// Transaction, and with PrepareStmt; for a dialector opened by DriverName
// and for one given an existing *sql.DB as Conn. GORM's sqlite dialector
// reads go-sqlite3's error by its fields (through encoding/json), so
// cleolease must return SQLite's error unwrapped.
func TestGormTranslateError(t *testing.T) {
	t.Parallel()
	_, dsn := tempDSN(t)
	sqlDB, err := sql.Open("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	quiet := &gorm.Config{TranslateError: true, Logger: logger.Discard}
	viaConn, err := gorm.Open(sqlite.Dialector{Conn: sqlDB}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	viaName, err := openGorm("cleolease", dsn)
	if err != nil {
		t.Fatal(err)
	}
	viaNamePrep, err := openGorm("cleolease", dsn, prepareStmt)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*gorm.DB{viaName, viaNamePrep} {
		s, _ := d.DB()
		t.Cleanup(func() { s.Close() })
	}
	if err := viaName.AutoMigrate(&Item{}, &Owner{}, &Pet{}); err != nil {
		t.Fatal(err)
	}
	if err := viaName.Create(&Item{Code: "x"}).Error; err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*gorm.DB{
		"DriverName":                        viaName,
		"DriverName+SkipDefaultTransaction": viaName.Session(&gorm.Session{SkipDefaultTransaction: true}),
		"DriverName+PrepareStmt":            viaNamePrep,
		"DriverName+PrepareStmt+Skip":       viaNamePrep.Session(&gorm.Session{SkipDefaultTransaction: true}),
		"Conn":                              viaConn,
		"Conn+SkipDefaultTransaction":       viaConn.Session(&gorm.Session{SkipDefaultTransaction: true}),
	} {
		err := d.Create(&Item{Code: "x"}).Error
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("%s: duplicate Create: got %T %v, want gorm.ErrDuplicatedKey", name, err, err)
		}
		err = d.Transaction(func(tx *gorm.DB) error { return tx.Create(&Item{Code: "x"}).Error })
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("%s: duplicate Create in Transaction: got %T %v, want gorm.ErrDuplicatedKey", name, err, err)
		}
		err = d.Create(&Pet{OwnerID: 999}).Error
		if !errors.Is(err, gorm.ErrForeignKeyViolated) {
			t.Errorf("%s: Pet with no Owner: got %T %v, want gorm.ErrForeignKeyViolated", name, err, err)
		}
	}
	var n, pets int64
	viaName.Model(&Item{}).Count(&n)
	viaName.Model(&Pet{}).Count(&pets)
	if n != 1 || pets != 0 {
		t.Errorf("%d items and %d pets, want 1 and 0", n, pets)
	}
	// The pool is usable afterwards: no connection was left inside a
	// transaction or holding the lease.
	if err := viaConn.Create(&Item{Code: "y"}).Error; err != nil {
		t.Errorf("Create after the duplicates: %v", err)
	}
}
