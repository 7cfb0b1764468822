package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressUI shows what a long command is doing on standard error: a
// progress bar on a terminal, one line per step otherwise (logs, CI, tests).
type progressUI struct {
	w     io.Writer
	tty   bool
	quiet bool
	bar   *progressbar.ProgressBar
	label string
}

func newProgress(w io.Writer, quiet bool) *progressUI {
	return &progressUI{w: w, tty: isTerminal(w), quiet: quiet}
}

// step announces a step that has no measurable progress.
func (u *progressUI) step(format string, args ...any) {
	if u.quiet {
		return
	}
	fmt.Fprintln(u.w, wrap("", "  ", fmt.Sprintf(format, args...)))
}

// start begins a timed step of length d.
func (u *progressUI) start(label string, d time.Duration) {
	u.label = label
	if u.quiet {
		return
	}
	if !u.tty {
		fmt.Fprintln(u.w, wrap("", "  ", fmt.Sprintf("%s: running for %s…", label, d)))
		return
	}
	u.bar = progressbar.NewOptions64(d.Milliseconds(),
		progressbar.OptionSetWriter(u.w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionSetWidth(20), // with the description, within width columns
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetTheme(progressbar.ThemeASCII),
	)
}

// tick reports progress of the timed step.
func (u *progressUI) tick(elapsed time.Duration, commits, errs int64) {
	if u.bar == nil {
		return
	}
	u.bar.Describe(fmt.Sprintf("%-16s %9s commits %9s errors", u.label, fmtInt(commits), fmtInt(errs)))
	u.bar.Set64(min(elapsed.Milliseconds(), u.bar.GetMax64()))
}

// done ends the timed step.
func (u *progressUI) done(summary string) {
	if u.bar != nil {
		u.bar.Finish()
		u.bar = nil
	}
	if !u.quiet {
		fmt.Fprintln(u.w, wrap("", "  ", u.label+": "+summary))
	}
}
