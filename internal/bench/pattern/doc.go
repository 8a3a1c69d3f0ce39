// Package pattern generates the file contents the benchmark writes and
// verifies what it reads back.
//
// Contents are a deterministic function of (key, offset): byte o of the
// stream with key k is pool[(o+shift(k)) mod Period], where pool is Period
// bytes of seeded pseudo-random data. Writers slice the pool without copying,
// so generating data costs nothing next to the system call, and readers
// verify with one memory compare per record. Different keys (files, or
// generations of one file) start at different places in the pool, so data
// read from the wrong file, the wrong offset or an older generation is
// caught; only an error that moves data by an exact multiple of Period
// (an odd number near 8 MiB) within one file would go unseen.
//
// The data is random, so compressing file systems cannot make it smaller.
//
// Import rules: standard library only.
package pattern
