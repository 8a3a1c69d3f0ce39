// Package bench is the benchmark lab behind `shoal bench`: it runs the
// workloads of package workload against any directories and builds the
// report of package result.
//
// Design. Fair comparison on a shared, noisy machine is the point, so the
// runner interleaves: for each workload, round 1 runs on target A, then B,
// then C, round 2 again A, B, C, and so on. Drift of the machine over the
// run (another job starting, a cache warming, thermal throttling) then
// falls on every target alike, and the report gives the median over the
// rounds with the spread beside it. Running all rounds of A before B would
// hand one target the quiet minutes.
//
// Each run (one workload, one round, one target) works in a fresh
// directory <dir>/shoal-bench.<run-id>/<workload>-r<round>/c<client>, one
// per client; with several directories in a target, client i uses
// directory i mod n, and all clients of the run start each phase together.
// The run directory is removed after each run and the top directory at
// the end, whatever happened, including cancellation; a failed removal is
// a note in the report.
//
// Cold phases (the first read after writing, a listing of a huge
// directory) drop the page cache first with `sync; echo 3 >
// /proc/sys/vm/drop_caches`. That needs root; without it the run goes on
// warm, and the report says so.
//
// Import rules: the bench sub-packages, standard library and
// golang.org/x/sys/unix. No other Shoal package: bench measures any
// directory and must not depend on Shoal's internals.
package bench
