package core

import "testing"

// A caller's statement inside the driver's transaction that may end it
// (COMMIT or END as a word, in any case) is told to the Hold before it
// runs (leaseTx.exposing); other words containing them are not.
func TestMayEndTx(t *testing.T) {
	for q, want := range map[string]bool{
		"COMMIT":                                  true,
		"commit; begin":                           true,
		"UPDATE t SET a = 1; END TRANSACTION":     true,
		"SELECT CASE WHEN a THEN 1 END FROM t":    true, // an early listen, nothing worse
		"INSERT INTO commits VALUES (1)":          false,
		"UPDATE t SET commit_time = 1, ended = 2": false,
		"SELECT 1":                                false,
		"":                                        false,
	} {
		if got := mayEndTx(q); got != want {
			t.Errorf("mayEndTx(%q) = %v, want %v", q, got, want)
		}
	}
}
