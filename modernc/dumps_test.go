package modernc_test

import (
	"path/filepath"
	"testing"

	"github.com/cleocode/cleolease/internal/basetest"
	"github.com/cleocode/cleolease/internal/testdir"
	"github.com/cleocode/cleolease/modernc"
)

// An application's export of every table (the lease tables too) imports
// into a fresh file and into the same file after its tables were
// dropped, and both lanes take writes afterwards, as through go-sqlite3
// (issue 39; the root package's TestExportImportEveryTable runs the same
// shapes with the application running in another process).
func TestDumpsReload(t *testing.T) {
	dir := testdir.New(t)
	basetest.DumpsReload(t, modernc.DriverName, fileDSN, filepath.Join(dir, "app.db"), filepath.Join(dir, "new.db"))
}
