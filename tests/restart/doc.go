// Package restart proves that a mount outlives its serving process: the
// server of a supervised mount is killed with SIGKILL, or replaced by
// `shoal mount --upgrade`, while applications work in the mount — fio
// writing and verifying, git cloning, a process holding a flock and an
// unlinked file it keeps writing — and none of them may see an error,
// lose an acknowledged byte, lose its lock or its descriptor. Each test
// also measures the longest time an application waited (the stall) and
// logs it.
package restart
