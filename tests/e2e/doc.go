// Package e2e holds Shoal's mounted end-to-end tests: each test builds the
// real shoal binary (testutil.Binary), formats a fresh volume in a temporary
// directory, mounts it in a subprocess and drives it through the kernel with
// os, syscall and golang.org/x/sys/unix calls, the way applications do.
//
// Files are split by concern (files, dirs, rename, attrs, xattr, links,
// errors, permissions, unlinked, bigfile, mmap, fallocate, copyrange,
// persist, random, concurrency, cli, corrupt). The tests skip without
// /dev/fuse or root unless SHOAL_REQUIRE_FUSE=1; see docs/testing.md.
//
// The package has no non-test code and imports no Shoal package besides
// internal/testutil: it tests the binary as users run it.
package e2e
