package sqlkv

import "shoal/internal/meta/kv"

// NoGroupCommit turns group commit off on a SQLite store (benchmarks
// compare both).
func NoGroupCommit(s kv.Store) { s.(*Store).group = nil }
