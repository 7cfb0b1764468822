package sqlbase

import "strings"

// FirstWord returns the first word of text, upper-cased, after white
// space, ';', SQL comments (-- and /* */) and opening parentheses: the
// keyword SQLite will read first ("" when there is none).
func FirstWord(text string) string {
	for i := 0; i < len(text); {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '(' || c == ';':
			i++
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return ""
			}
			i += 2 + end + 2
		default:
			j := i
			for j < len(text) && (text[j] >= 'a' && text[j] <= 'z' || text[j] >= 'A' && text[j] <= 'Z' || text[j] == '_') {
				j++
			}
			return strings.ToUpper(text[i:j])
		}
	}
	return ""
}
