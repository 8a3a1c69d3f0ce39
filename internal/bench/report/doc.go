// Package report writes a result.Report for people and programs: a summary
// table for the terminal (Table), the JSON document whose schema
// docs/bench.md describes (JSON), and a self-contained HTML page with one
// bar chart per workload drawn as inline SVG by this package (HTML) — no
// scripts, fonts or anything else fetched from the network.
//
// Every figure is "higher is better"; ratios are to the first target.
//
// Import rules: standard library and shoal/internal/bench/{result,stats,
// machine,workload} only.
package report
