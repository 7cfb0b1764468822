package core

import (
	"database/sql"
	"fmt"
	"os"
	"testing"
)

// Multi-process tests re-execute the test binary with coreRoleEnv set;
// TestMain then plays that role instead of running the tests.
const coreRoleEnv = "CLEOLEASE_CORE_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(coreRoleEnv) {
	case "":
		os.Exit(m.Run())
	case "write":
		os.Exit(roleWrite())
	default:
		fmt.Println("ERR unknown role", os.Getenv(coreRoleEnv))
		os.Exit(2)
	}
}

// roleWrite opens CLEOLEASE_DSN through the core (sql.Open("cleolease")),
// inserts a row into table other, prints "done" and exits.
func roleWrite() int {
	db, err := sql.Open("cleolease", os.Getenv("CLEOLEASE_DSN"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO other VALUES (1)"); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("done")
	return 0
}
