// Package machine gathers the facts a benchmark report needs to be read
// later: the CPU, cores, memory and kernel of the machine, and for every
// measured directory the file system it lives on (type from statfs(2) and
// from /proc/mounts, mount source, options, size).
//
// Every fact is best effort: what cannot be read is left empty, and the
// reason is kept in Notes, never an error that stops a benchmark.
//
// Import rules: standard library and golang.org/x/sys/unix only.
package machine
