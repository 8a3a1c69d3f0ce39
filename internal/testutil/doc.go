// Package testutil is the shared harness for tests that need a real Shoal
// mount or a real metadata/object service.
//
// It owns:
//   - env.go: the skip-or-fail rules for FUSE (RequireFUSE) and for the
//     external services (PGURL, RedisURL, S3URL). A test that cannot find
//     what it needs skips with a message naming the variable to set, unless
//     SHOAL_REQUIRE_FUSE=1 / SHOAL_REQUIRE_SERVICES=1, in which case it fails:
//     a green CI run that skipped the real parts proves nothing.
//   - binary.go: Binary, which builds ./cmd/shoal once per test process.
//   - volume.go and mount.go: NewVolume formats a fresh embedded volume
//     (SQLite + file bucket) with the real binary, and Volume.Mount runs
//     `shoal mount` as a subprocess in the foreground, the way gocryptfs'
//     tests do, so a deadlock in the mount never freezes the test process.
//   - hygiene.go: the leftover-mount and fd-leak checks run by Main after a
//     package's tests.
//   - pagecache.go: Resident, the fraction of a file's pages in the page
//     cache, for tests of what is kept in memory or read ahead.
//   - errno.go: Errno, the errno an error carries, for comparing outcomes
//     with a model's or the local disk's.
//
// Invariants: every mount started here is registered and unmounted by a
// t.Cleanup; Main fails the run if one is still in /proc/self/mountinfo at
// the end. Mount processes are never left running: Cleanup waits for them
// and fails the test if they do not exit.
//
//   - helper.go: RunHelper and HelperCmd re-run the test binary as a helper
//     process (for example as uid 65534 for permission tests, or as extra
//     writer processes), dispatched by Main.
//
// Import rules: testutil imports the standard library and one Shoal
// package, rundir (where a mount keeps its pid file: a path convention,
// not code under test), so it tests the binary the way a user runs it and
// any package's tests may import it.
package testutil
