// Package result defines the report of a benchmark run: the values the
// runner fills in and every output format (terminal table, JSON, HTML)
// reads. Its JSON encoding is the stable schema documented in
// docs/bench.md; fields are only ever added to schema version 1, never
// renamed or removed.
//
// Import rules: standard library and the bench packages stats, machine and
// workload (for Param) only.
package result
