package sqlbase

import "testing"

func TestFirstWord(t *testing.T) {
	for q, want := range map[string]string{
		"select 1":                "SELECT",
		"  -- c\n/* d */ (insert": "INSERT",
		";; pragma x":             "PRAGMA",
		"/* open":                 "",
		"":                        "",
		"42":                      "",
	} {
		if got := FirstWord(q); got != want {
			t.Errorf("FirstWord(%q) = %q, want %q", q, got, want)
		}
	}
}
