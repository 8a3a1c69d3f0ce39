// Package restart proves that a mount outlives its serving process: the
// server of a supervised mount is killed with SIGKILL, or replaced by
// `shoal mount --upgrade`, while applications work in the mount — fio
// writing and verifying, git cloning, a process holding a flock and an
// unlinked file it keeps writing — and none of them may see an error,
// lose an acknowledged byte, lose its lock or its descriptor. What was
// written is read back where the page cache cannot answer (a second mount
// of the volume, or after dropping the file's pages), so a lost write
// fails the test. Each test also measures the longest time an application
// waited (the stall), logs it and fails above 10 s. Killing the supervisor
// and the server together, the next mount applies the journal's
// acknowledged writes; a successor holds the kernel connection once.
//
// The journal (journal_test.go): a rotation amid many closes neither fails
// nor loses a write (the test hook SHOAL_TEST_JOURNAL_SEGMENT makes
// segments small), and a mount made at once after an umount(8), while the
// old server still closes (SHOAL_TEST_CLOSE_DELAY), keeps its journal and
// control socket: the old mount removes only its own.
//
// A server killed inside an operation (the test hook SHOAL_TEST_KILL,
// fusefs.KillEnv) leaves the kernel to resend a request that may already
// have happened: with its intent journaled and nothing committed, with
// the engine's commit done and no reply journaled, or with its reply
// journaled and not sent. The successor answers it from the journal, or
// finds out from the volume whether it committed, so an exclusive create,
// a mknod, mkdir, symlink, link, unlink, rmdir, rename, exchange,
// exclusive setxattr and removexattr succeed once, an O_APPEND write is
// in the file once, and a resent open's close releases the file
// (unlinked, it is purged). TestCrashAgainstModel (crashmodel_test.go)
// crashes each such op at each stage inside a random sequence of
// operations on six names in two directories, seeded (SHOAL_SEED), and
// checks every outcome, errno included, and the tree read through a second
// mount against a model of the file system (model_test.go).
package restart
