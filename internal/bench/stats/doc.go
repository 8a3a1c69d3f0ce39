// Package stats summarises the repeated samples of one benchmark figure:
// median, spread and ratios between targets.
//
// The median is the headline because it ignores one disturbed round on a
// shared machine; the spread, (max-min)/median, says how far to trust it.
// Ratios compare medians, so they inherit that robustness.
//
// Import rules: standard library only.
package stats
