// Package vm proves that Shoal carries virtual-machine disk images: qemu's
// own tools (qemu-img, qemu-io from Debian's qemu-utils) work on a mount,
// with their image locks, direct I/O and sparse files, and a guest disk can
// be handed from one mount ("host") to another, as live migration needs.
//
// What the tests check:
//
//   - image_test.go: qcow2 and raw images created on the mount, written
//     and read back with patterns through O_DIRECT (--cache none) and the
//     page cache (writeback); `qemu-img check` finds no errors; `qemu-img
//     convert` between formats keeps the data; `qemu-img map` reports the
//     extents that were written, and agrees with SEEK_DATA/SEEK_HOLE.
//   - lock_test.go: qemu's image locks (OFD locks on bytes 100.. and
//     200..) exclude a second read-write open through another mount; they
//     go when the holder exits, and when it is killed with SIGKILL.
//   - migrate_test.go: the storage side of migration — qemu-io on mount A
//     writes and exits, qemu-io on mount B reads exactly that, both ways,
//     repeatedly; and a descriptor opened with O_DIRECT before the other
//     mount wrote sees the data once the writer has fsynced.
//   - netns_test.go: the hand-off again with the two mounts in separate
//     network namespaces that reach PostgreSQL or Redis and MinIO over
//     veth links and a bridge.
//   - clone_test.go: copy_file_range, `qemu-img convert -C` and
//     `cp --reflink=auto` of a 20 GiB sparse template return fast; the
//     first two store no new objects (cp cannot share on FUSE: FICLONE
//     never reaches the file system, and coreutils 9.1 then copies the
//     data extents); writes to a copy leave the template unchanged.
//   - sparse_test.go: preallocation=falloc/full/metadata, discard (punch
//     hole), and du (st_blocks) following writes and discards.
//   - ofd_test.go: F_OFD_SETLK/SETLKW/GETLK across mounts and between
//     two descriptions of one process; release when a description closes.
//   - direct_test.go: random aligned O_DIRECT writes and reads against an
//     in-memory model, through the mount.
//
// Tools: the tests need qemu-img and qemu-io; they skip without them,
// unless SHOAL_REQUIRE_FUSE=1 (scripts/test.sh installs qemu-utils), in
// which case a missing tool fails the test. FUSE and the server-backed
// cells follow the testutil rules (skip, or fail under SHOAL_REQUIRE_*).
//
// Disk use: images are sparse; the largest apparent size is 20 GiB with a
// few MiB of data, and every volume is removed when its test ends.
//
// Network: only loopback and the addresses of the namespaces created here
// (10.214.0.0/24 on a private bridge, removed when the test ends). The
// servers stay on 127.0.0.1: the test process relays the bridge address to
// them, so nothing shared is reconfigured.
package vm
