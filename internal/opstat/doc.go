// Package opstat counts the file-system operations a mount serves and
// keeps its slowest recent ones, for the summary the mount publishes with
// its session heartbeat (meta.SessionReport) and `shoal console` shows.
//
// Observe is on the path of every operation, so it is two atomic adds and
// one atomic load unless the operation is slow enough to enter the list
// of the slowest (at least MinSlow, and slower than the fastest one kept
// once the list is full); only then does it take a lock. Report runs at
// heartbeat cadence and turns the counters into a rate and a mean over
// the interval since the previous Report.
//
// Rejected: timing inside the engine's transaction helper (it sees
// transactions, not what an application waited for, and misses reads
// served from caches and the object store); a histogram per operation
// kind (that is the Prometheus metrics' job; the console needs a rate, a
// mean and the outliers).
//
// Import rules: opstat imports meta (for its report types) and nothing
// else of Shoal.
package opstat
