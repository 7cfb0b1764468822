package main

// Line width of everything the command prints.

import (
	"strings"
	"unicode/utf8"
)

// width is the widest line the command prints, in columns (runes). A
// single word wider than that (a long path) goes whole on a line of its
// own.
const width = 100

// wrap folds text into lines of at most width columns, breaking at spaces:
// the first line begins with first, the others with rest (both usually
// indentation). Runs of white space, newlines included, become one space.
// The result has no trailing newline.
func wrap(first, rest, text string) string {
	var b strings.Builder
	line, n := first, utf8.RuneCountInString(first)
	fresh := true // nothing but the prefix on the line yet
	for _, word := range strings.Fields(text) {
		wn := utf8.RuneCountInString(word)
		if !fresh && n+1+wn > width {
			b.WriteString(strings.TrimRight(line, " "))
			b.WriteByte('\n')
			line, n, fresh = rest, utf8.RuneCountInString(rest), true
		}
		if !fresh {
			line += " "
			n++
		}
		line += word
		n += wn
		fresh = false
	}
	b.WriteString(strings.TrimRight(line, " "))
	return b.String()
}

// wrapLines wraps each line of text on its own, keeping its indentation
// (its continuation lines two columns further in).
func wrapLines(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		body := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(body)]
		lines[i] = wrap(indent, indent+"  ", body)
	}
	return strings.Join(lines, "\n")
}

// widest is the width of text's widest line, in columns.
func widest(text string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		n = max(n, utf8.RuneCountInString(line))
	}
	return n
}
