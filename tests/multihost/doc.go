// Package multihost proves that one Shoal volume works as shared storage
// for many machines: the same volume mounted by several `shoal mount`
// processes at once, with PostgreSQL or Redis holding the metadata and an
// S3 server (MinIO) holding the data.
//
// What the tests check, each over the engine × store matrix (postgres+s3,
// redis+s3, and sqlite+file, whose one database file two mounts on one
// machine may share):
//
//   - visibility_test.go: close-to-open (write and close on one mount, an
//     open on another sees the data, size and mtime), directory changes
//     seen by other mounts within the entry timeout, at once with --strict.
//   - race_test.go: concurrent creates of distinct names in one directory
//     from two and four mounts (none lost, none twice) and rename races
//     (every file ends up exactly once, no entry points nowhere).
//   - locks_test.go: flock and fcntl byte-range locks exclude each other
//     across mounts (F_GETLK names the holder), and are released on
//     unlock, close, kill -9 of the holder and expiry of a killed mount's
//     session (which also drops it from `shoal status`).
//   - openfiles_test.go: a file open on one mount stays readable and
//     writable (fstat, pread, pwrite, fsync) after another mount unlinks
//     it or renames a file over it; its inode goes at the last close, or
//     with the holder's session when the holder is killed.
//   - restart_test.go: PostgreSQL, Redis and MinIO restart under a busy
//     mount; operations wait or fail with EIO but never return wrong data,
//     everything whose fsync succeeded is intact, and the mount works again
//     without a remount.
//   - quota_test.go: two mounts writing at once stay within a directory
//     quota exactly (EDQUOT) and within the volume's capacity plus the
//     documented bound (ENOSPC), on PostgreSQL and Redis.
//   - netns_test.go: two mounts in two network namespaces reach the servers
//     over veth links; one link is cut mid-workload, the other mount keeps
//     working, and the cut one recovers when the link returns.
//
// Servers: the matrix uses the shared servers named by SHOAL_TEST_PG,
// SHOAL_TEST_REDIS and SHOAL_TEST_S3 (started by scripts/test.sh), with a
// PostgreSQL schema, a Redis key namespace and an S3 key prefix per test.
// Tests that restart a server or need one reachable from a namespace start
// dedicated instances of the same binaries (servers_test.go), so the shared
// ones are never disturbed. Like every service test they skip when the
// variables are unset, and fail instead under SHOAL_REQUIRE_SERVICES=1.
//
// Network: only loopback and the addresses of the namespaces the tests
// create themselves (10.213.0.0/24 on a private bridge); every namespace,
// veth and bridge is removed when the test ends, also on failure.
//
// Helper processes (lockers, writers) are copies of the test binary run
// through testutil.HelperCmd, so a process can hold a lock on one mount
// while the test acts on another, and can be killed with SIGKILL.
package multihost
