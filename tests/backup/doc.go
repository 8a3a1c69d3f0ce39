// Package backup holds the mounted end-to-end tests of `shoal backup` and
// `shoal restore`: a volume on each engine (SQLite, PostgreSQL, Redis) is
// backed up to a directory while a writer updates files through a mount,
// incrementally after a few changes, verified (and caught damaged), and
// restored into another engine kind, mounted and compared with the
// snapshot the backup was taken from, then checked with `shoal fsck`.
//
// The tests skip without /dev/fuse or the services unless
// SHOAL_REQUIRE_FUSE=1 and SHOAL_REQUIRE_SERVICES=1; see docs/testing.md.
//
// Import rules: tests only; they run the real binary through testutil and
// read the destination directory directly.
package backup
