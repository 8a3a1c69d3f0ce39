// Package opstat counts the file-system operations and bytes a mount
// serves and keeps its slowest recent operations, for the summary the
// mount publishes with its session heartbeat (meta.SessionReport) and
// `shoal console` shows.
//
// A Recorder is the mount's fusefs.Observer: the FUSE adaptor's metered
// wrapper times each request once and tells the Recorder, which passes it
// on to the Prometheus registry when --metrics is on. So every mount is
// metered (the console needs every mount's figures), at the cost of a
// clock read per request, and never timed twice.
//
// Op is on the path of every request, so it is two atomic adds and one
// atomic load unless the request is slow enough to enter the list of the
// slowest (at least MinSlow, and slower than the fastest one kept once
// the list is full); only then does it take a lock. Report runs at
// heartbeat cadence and turns the totals into rates and a mean over the
// interval since the previous Report.
//
// Rejected: timing inside the engine's transaction helper (it sees
// transactions, not what an application waited for, and misses reads
// served from caches and the object store); reading the slow requests off
// the Prometheus histograms (they keep buckets, not requests, and exist
// only with --metrics).
//
// Import rules: opstat imports meta (for its report types) and nothing
// else of Shoal; it matches fusefs.Observer by method set.
package opstat
