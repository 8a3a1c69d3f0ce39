package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// State is a snapshot of a running phase.
type State struct {
	Phase string
	Unit  string // "MiB/s" (Done and Total are bytes) or "ops/s"
	Done  int64
	Total int64 // 0 if unknown
	Start time.Time
	End   time.Time // set for a finished phase
}

// Source reports the running phase; ok is false before the first phase.
type Source func() (s State, ok bool)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Display draws progress to w. The zero value is not usable; use New.
type Display struct {
	w        io.Writer
	tty      bool
	interval time.Duration

	mu       sync.Mutex // serialises writes and guards the fields below
	stop     chan struct{}
	done     chan struct{}
	label    string
	minPhase time.Duration // off a terminal, shorter phases are not printed
}

// QuietUnder makes a display that is not a terminal leave out the lines of
// phases that took less than min: progress for what is slow, silence for
// what is quick (fsck and gc print it unasked on a log file or pipe).
func (d *Display) QuietUnder(min time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.minPhase = min
}

// New returns a display writing to w; tty selects in-place redrawing.
func New(w io.Writer, tty bool) *Display {
	return &Display{w: w, tty: tty, interval: 200 * time.Millisecond}
}

// Track follows src under label until Stop: it polls src every interval
// (sources may notice finished phases as they are polled) and on a
// terminal redraws the running phase's line. Track stops a previous
// source.
func (d *Display) Track(label string, src Source) {
	d.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.label = label
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	go d.loop(src, d.stop, d.done)
}

// PhaseDone reports a finished phase. Off a terminal it prints the phase's
// final line; on a terminal the next redraw replaces it.
func (d *Display) PhaseDone(s State) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.tty && s.End.Sub(s.Start) >= d.minPhase {
		fmt.Fprintln(d.w, Line(d.label, s, s.End))
	}
}

// Stop ends tracking and clears the terminal line.
func (d *Display) Stop() {
	d.mu.Lock()
	stop, done := d.stop, d.done
	d.stop = nil
	d.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty {
		fmt.Fprint(d.w, "\r\x1b[K")
	}
}

func (d *Display) loop(src Source, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if s, ok := src(); ok && d.tty {
				d.mu.Lock()
				fmt.Fprintf(d.w, "\r\x1b[K%s", Line(d.label, s, time.Now()))
				d.mu.Unlock()
			}
		}
	}
}

// barWidth is the bar's width in cells.
const barWidth = 24

// Line formats one progress line, with the rate up to now.
func Line(label string, s State, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-22s ", label, s.Phase)
	frac := 0.0
	if s.Total > 0 {
		frac = min(float64(s.Done)/float64(s.Total), 1)
	}
	full := int(frac * barWidth)
	b.WriteString("[" + strings.Repeat("#", full) + strings.Repeat(".", barWidth-full) + "]")
	if s.Total > 0 {
		fmt.Fprintf(&b, " %3.0f%%", frac*100)
	}
	if secs := now.Sub(s.Start).Seconds(); secs > 0 {
		v := float64(s.Done) / secs
		if s.Unit == "MiB/s" {
			v /= 1 << 20
		}
		fmt.Fprintf(&b, "  %.1f %s", v, s.Unit)
	}
	return b.String()
}
