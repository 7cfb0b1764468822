package sqlbase

import (
	"net/url"
	"strings"
)

// Pragma is one PRAGMA as a DSN's _pragma value gives it (modernc's and
// ncruces's DSNs run each _pragma value as "PRAGMA " + value).
type Pragma struct {
	// Schema is the schema it names, lower-cased; "" when unqualified.
	Schema string
	// Name is the PRAGMA's name, lower-cased.
	Name string
	// Value is the argument, unquoted; "" for none.
	Value string
	// Set: an argument is given (name(value) or name=value).
	Set bool
	// Text is the whole value, trimmed and lower-cased (modernc sorts its
	// _pragma values by it).
	Text string
}

// Main reports whether p applies to the main database.
func (p Pragma) Main() bool { return p.Schema == "" || p.Schema == "main" }

// ParsePragma reads v as "[schema.]name", "[schema.]name(value)" or
// "[schema.]name=value", with white space around the tokens and one
// trailing ';' allowed; ok is false for anything else, such as a second
// statement after a ';' (p.Name is then what it read of the name).
func ParsePragma(v string) (p Pragma, ok bool) {
	p.Text = strings.ToLower(strings.TrimSpace(v))
	s := strings.TrimSpace(v)
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	ident := func() string {
		s = strings.TrimLeft(s, " \t\r\n\f")
		i := 0
		for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || i > 0 && s[i] >= '0' && s[i] <= '9') {
			i++
		}
		id := strings.ToLower(s[:i])
		s = strings.TrimLeft(s[i:], " \t\r\n\f")
		return id
	}
	p.Name = ident()
	if strings.HasPrefix(s, ".") {
		s = s[1:]
		p.Schema, p.Name = p.Name, ident()
	}
	if p.Name == "" {
		return p, false
	}
	switch {
	case s == "":
		return p, true
	case s[0] == '=':
		p.Value, p.Set = strings.TrimSpace(s[1:]), true
	case s[0] == '(' && s[len(s)-1] == ')':
		p.Value, p.Set = strings.TrimSpace(s[1:len(s)-1]), true
	default:
		return p, false
	}
	if p.Value == "" || strings.ContainsAny(p.Value, ";()") {
		return p, false
	}
	if n := len(p.Value); n >= 2 && (p.Value[0] == '\'' || p.Value[0] == '"') && p.Value[n-1] == p.Value[0] {
		p.Value = p.Value[1 : n-1]
	}
	return p, true
}

// BusyFirst moves dsn's _pragma=busy_timeout parameters in front of its
// other query parameters, keeping the order of the rest, so that SQLite's
// busy handler is set before a PRAGMA that may wait for a lock
// (journal_mode(WAL) on a fresh file); a dsn without one, or where it
// comes first already, is returned unchanged.
func BusyFirst(dsn string) string {
	head, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return dsn
	}
	var first, rest []string
	for _, p := range strings.Split(query, "&") {
		if isBusyPragma(p) {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(first) == 0 {
		return dsn
	}
	return head + "?" + strings.Join(append(first, rest...), "&")
}

// isBusyPragma reports whether the query parameter p (raw, key=value) is
// a _pragma that sets busy_timeout ("busy_timeout(N)", "busy_timeout=N",
// any case).
func isBusyPragma(p string) bool {
	k, v, _ := strings.Cut(p, "=")
	if k, err := url.QueryUnescape(k); err != nil || k != "_pragma" {
		return false
	}
	v, err := url.QueryUnescape(v)
	if err != nil {
		return false
	}
	v = strings.ToLower(strings.TrimSpace(v))
	name, _, _ := strings.Cut(v, "(")
	name, _, _ = strings.Cut(name, "=")
	return strings.TrimSpace(name) == "busy_timeout"
}
