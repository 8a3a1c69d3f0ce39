// Package progress draws the per-phase progress of a benchmark on a
// terminal: one line, redrawn in place, with the run's label, the phase,
// a bar, the percentage and the current rate. When the output is not a
// terminal (and progress was asked for anyway) it prints one line per
// finished phase instead, so logs stay readable; QuietUnder leaves out the
// phases that were quick (fsck and gc show progress unasked, but only for
// what took over a second).
//
// A Display polls its Source from one goroutine; sources must be safe for
// concurrent use.
//
// Import rules: standard library and golang.org/x/sys/unix only.
package progress
