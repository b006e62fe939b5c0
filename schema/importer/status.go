package importer

import (
	"fmt"
	"io"
	"os"
)

// status writes the build's progress. On a terminal the progress line is
// rewritten in place; elsewhere (make in CI, a log file) every update is a
// line of its own, so the log stays readable.
type status struct {
	w     io.Writer
	tty   bool
	dirty bool // a progress line is on screen
}

func newStatus(w io.Writer) *status {
	if w == nil {
		w = io.Discard
	}
	s := &status{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			s.tty = true
		}
	}
	return s
}

// progress shows how far the build is.
func (s *status) progress(format string, args ...any) {
	if s.tty {
		fmt.Fprintf(s.w, "\r\033[K"+format, args...)
		s.dirty = true
		return
	}
	fmt.Fprintf(s.w, format+"\n", args...)
}

// line prints a result that stays: a source's summary, a warning.
func (s *status) line(format string, args ...any) {
	if s.dirty {
		fmt.Fprint(s.w, "\r\033[K")
		s.dirty = false
	}
	fmt.Fprintf(s.w, format+"\n", args...)
}
