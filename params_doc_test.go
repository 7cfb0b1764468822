package cleolease

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the DSN parameter tables of README.md and doc.go from leaseParams")

// The README's DSN table and the package documentation's list are rendered
// from leaseParams, the one place a parameter's name, default and meaning
// live; TestParamDocs fails when either has drifted
// (go test -run TestParamDocs -update-docs . rewrites them).

func paramsMarkdown() string {
	var b strings.Builder
	b.WriteString("| parameter | type | default | meaning |\n|---|---|---|---|\n")
	for _, p := range leaseParams {
		def := "none"
		if p.def != "" {
			def = "`" + p.def + "`"
		}
		b.WriteString("| `" + p.name + "` | " + p.kind + " | " + def + " | " + p.doc + " |\n")
	}
	return b.String()
}

func paramsGoDoc() string {
	var b strings.Builder
	for _, p := range leaseParams {
		def := p.def
		if def == "" {
			def = "none"
		}
		b.WriteString("//   - " + p.name + " (" + def + "): " + plainDoc(p.doc) + "\n")
	}
	return b.String() + "//\n"
}

var (
	mdStrong = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	mdEmph   = regexp.MustCompile("(^|[\\s(])\\*([a-z][^*`]*)\\*")
)

// plainDoc turns a parameter's Markdown (the README's) into Go doc-comment
// text, which has no markup for code, bold or italics: go doc would show the
// backticks and asterisks as they are.
func plainDoc(md string) string {
	s := mdStrong.ReplaceAllString(md, "$1")
	s = mdEmph.ReplaceAllString(s, "$1$2")
	s = strings.ReplaceAll(s, "`.`", `"."`) // a bare . would read as the end of a sentence
	return strings.ReplaceAll(s, "`", "")
}

// between returns the text of s between the marker lines, and the offsets.
func between(t *testing.T, s, begin, end string) (string, int, int) {
	t.Helper()
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("markers %q … %q not found", begin, end)
	}
	i += len(begin)
	return s[i:j], i, j
}

func TestParamDocs(t *testing.T) {
	for _, f := range []struct {
		file, begin, end, want string
	}{
		{"README.md", "<!-- params:begin -->\n", "<!-- params:end -->", paramsMarkdown()},
		{"doc.go", "// a Config. The parameters (defaults in parentheses):\n//\n", "// Refused at sql.Open", paramsGoDoc()},
	} {
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		got, i, j := between(t, s, f.begin, f.end)
		if got == f.want {
			continue
		}
		if *updateDocs {
			if err := os.WriteFile(f.file, []byte(s[:i]+f.want+s[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s's parameter table differs from leaseParams; run go test -run TestParamDocs -update-docs .\n got:\n%s\nwant:\n%s", f.file, got, f.want)
	}
}
