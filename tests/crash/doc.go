// Package crash holds the tests that try hardest to lose acknowledged
// data: the mount process is killed with SIGKILL in the middle of a mixed
// workload, round after round; the object store runs out of space mid-put;
// stored blocks and the metadata database are damaged on purpose; and a
// volume with every file type is dumped and loaded into another engine.
//
// The rule every crash round checks: a file whose fsync() or close()
// returned holds exactly what was acknowledged, after the next mount. The
// workload keeps that journal in the test process, outside the mount, and
// the operation that was in flight when the kill landed may be seen done
// or not done, never half done for metadata, and for data only as a mix
// of the new bytes and zeros. After each round the tree must have no
// entry that points nowhere, `shoal fsck` must find nothing but leaked
// objects (and counter drift), and `shoal gc --grace 0s` must reclaim those
// so that fsck is then clean.
//
// Rounds and seed: SHOAL_CRASH_ROUNDS (default 20) and SHOAL_CRASH_SEED
// (default: random, printed) make a failing run repeatable. The package
// runs in about two to four minutes on two cores.
//
// Import rules: tests only; they run the real binary through testutil and
// read the bucket directory and database file directly.
package crash
