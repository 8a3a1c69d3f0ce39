// Package workload holds the benchmark workloads (iozone-, bonnie- and
// PostMark-style, mass creation, huge directory) and the small framework
// they run in: a Client is one benchmark client working in its own
// directory, and a Group runs several clients of one target in lock-step.
//
// Design. A workload is a fixed sequence of timed phases. Every client of a
// run calls Client.Phase for the same phases in the same order; Phase waits
// at a barrier until all clients have arrived, so each phase has a common
// start for all clients (and for all directories of a multi-directory
// target). The phase's time is from that start to the end of the slowest
// client; its work is the sum over clients. Between phases, untimed work
// (such as dropping the page cache before a cold phase) runs exactly once,
// by the last client to arrive.
//
// Errors never stop a run: a failing phase records its error (ENOSPC, EIO,
// EACCES, a data mismatch...) in the Measure, and that client skips its
// remaining phases while still meeting the barriers, so the other clients
// and the runner carry on. Every read is verified against the pattern that
// was written (package pattern), so wrong data is an error, not a result.
//
// Invariants:
//   - A workload touches only its Client's Dir.
//   - Run calls Phase for every phase it declares, in the same order for every
//     client, whatever happened before (Phase itself skips the work).
//
// Import rules: standard library, golang.org/x/sys/unix and
// shoal/internal/bench/pattern only; no other Shoal packages, so the
// workloads measure any directory, not only Shoal.
package workload
