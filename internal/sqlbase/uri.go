package sqlbase

import (
	"net/url"
	"strings"
)

// SQLite's own reading of a database name: the "file:" URI syntax
// (sqlite.org/uri.html) every base passes on to SQLite.

// MemdbShared reports whether SQLite's memdb VFS shares a database called
// name between connections (names of two or more bytes starting with '/').
func MemdbShared(name string) bool {
	return len(name) > 1 && (name[0] == '/' || name[0] == '\\')
}

// URIBool is sqlite3_uri_boolean's reading of a value (default false).
func URIBool(v string) bool {
	if v != "" && '0' <= v[0] && v[0] <= '9' {
		n := 0
		for i := 0; i < len(v) && '0' <= v[i] && v[i] <= '9' && n < 1<<20; i++ {
			n = n*10 + int(v[i]-'0')
		}
		return n != 0
	}
	switch strings.ToLower(v) {
	case "on", "yes", "true":
		return true
	}
	return false
}

// ParseURI decodes a "file:" URI the way sqlite3ParseUri does without
// SQLITE_ALLOW_URI_AUTHORITY (the default build of go-sqlite3, modernc and ncruces): an authority
// ("file://host/…") must be empty or "localhost"; the path ends at '?' or
// '#'; the query ends at '#'; %HH escapes are decoded in path, names and
// values ('+' is not a space), "%00" drops the rest of its part, and an
// option with an empty name is skipped. It returns the path and the
// (name, value) options in order.
func ParseURI(uri string) (path string, opts [][2]string, err error) {
	n := len(uri)
	in := len("file:")
	if strings.HasPrefix(uri[in:], "//") {
		in += 2
		end := in
		for end < n && uri[end] != '/' {
			end++
		}
		if auth := uri[in:end]; auth != "" && auth != "localhost" {
			return "", nil, &ParamError{Param: "file: URI authority", Value: auth, Reason: `SQLite accepts only an empty authority or "localhost" (file:///abs/path or file:rel/path)`}
		}
		in = end
	}
	// out mirrors SQLite's zFile buffer: NUL-separated path, names, values.
	out := make([]byte, 0, n)
	last := func() byte {
		if len(out) == 0 {
			return 0 // SQLite's buffer is preceded by NULs
		}
		return out[len(out)-1]
	}
	state := 0 // 0 path, 1 option name, 2 option value
	for in < n && uri[in] != '#' {
		c := uri[in]
		in++
		switch {
		case c == '%' && in+1 < n && isHex(uri[in]) && isHex(uri[in+1]):
			c = unhex(uri[in])<<4 | unhex(uri[in+1])
			in += 2
			if c == 0 {
				for in < n {
					d := uri[in]
					if d == '#' || (state == 0 && d == '?') ||
						(state == 1 && (d == '=' || d == '&')) ||
						(state == 2 && d == '&') {
						break
					}
					in++
				}
				continue
			}
		case state == 1 && (c == '&' || c == '='):
			if last() == 0 {
				// An empty option name: skip the option.
				for in < n && uri[in] != '#' && uri[in-1] != '&' {
					in++
				}
				continue
			}
			if c == '&' {
				out = append(out, 0)
			} else {
				state = 2
			}
			c = 0
		case (state == 0 && c == '?') || (state == 2 && c == '&'):
			c = 0
			state = 1
		}
		out = append(out, c)
	}
	if state == 1 {
		out = append(out, 0)
	}
	out = append(out, 0, 0, 0, 0)
	next := func(i int) (string, int) {
		j := i
		for out[j] != 0 {
			j++
		}
		return string(out[i:j]), j + 1
	}
	path, i := next(0)
	for i < len(out) && out[i] != 0 {
		var name, val string
		name, i = next(i)
		val, i = next(i)
		opts = append(opts, [2]string{name, val})
	}
	return path, opts, nil
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

func unhex(b byte) byte {
	switch {
	case '0' <= b && b <= '9':
		return b - '0'
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10
	default:
		return b - 'A' + 10
	}
}

// FileURI returns the "file:" URI of the file path (its characters that
// URIs reserve %-escaped, as SQLite decodes them) with the query query
// (already encoded; "" for none).
func FileURI(path, query string) string {
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: query}
	return u.String()
}
