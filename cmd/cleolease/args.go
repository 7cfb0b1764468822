package main

import (
	"regexp"
	"slices"
	"time"
)

// negativeNumber matches an operation's numeric argument written with a
// minus sign ("force -1").
var negativeNumber = regexp.MustCompile(`^-[0-9]+$`)

// fixArgs rewrites the two command-line forms that pflag (cobra's flag
// parser) would misread, before cobra sees them:
//
//   - "migrate DB force -1": pflag takes "-1" for the shorthand flag '1'
//     ("unknown shorthand flag: '1'"). A negative number right after
//     force, down or goto is moved behind "--", which ends flag parsing, so
//     it stays the operation's argument (its place among the positional
//     arguments is kept: it is their last).
//   - "status DB --watch 2s": --watch has a value when given alone (every
//     second), so pflag leaves "2s" as a second positional argument. A
//     token that parses as a Go duration right after a bare --watch becomes
//     "--watch=2s".
//
// Anything after an explicit "--" is left alone.
func fixArgs(args []string) []string {
	cmd := ""
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			cmd = a
			break
		}
	}
	out := make([]string, 0, len(args)+1)
	var tail []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		switch {
		case cmd == "migrate" && i+1 < len(args) && slices.Contains([]string{"force", "down", "goto"}, a) && negativeNumber.MatchString(args[i+1]):
			out = append(out, a)
			tail = append(tail, args[i+1])
			i++
			continue
		case cmd == "status" && a == "--watch" && i+1 < len(args):
			if _, err := time.ParseDuration(args[i+1]); err == nil {
				out = append(out, "--watch="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	if len(tail) > 0 {
		if !slices.Contains(out, "--") {
			out = append(out, "--")
		}
		out = append(out, tail...)
	}
	return out
}
