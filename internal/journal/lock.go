package journal

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Ownership. A journal directory belongs to one process at a time: the
// server that writes it, or reads it to take over from a dead one. Two
// mounts at the same mountpoint one after the other (an umount(8), which
// returns once the kernel lets go, then a mount at once) use the same
// directory; without an owner the old server, still closing, would delete
// the segments of the new mount when it removes its journal, or the new
// mount would take the old one's writes over while that one still commits
// them. So a process takes the directory's lock (Acquire: an flock of the
// file DIR.lock beside it, which only its holder deletes, when the mount
// ended, and a process that locked a deleted file locks the new one) before
// it touches the directory, and holds it until it exits: the kernel releases it when the process dies however it dies,
// so a successor of a killed server gets it at once, and a new mount waits
// for the old server to finish closing.

// LockWaitNote is called once if Acquire has to wait, with the pid of the
// holder (0: unknown).
type LockWaitNote func(holder int)

// Acquire takes the lock of the journal directory dir for this process,
// waiting up to wait while another process holds it. The lock is held
// until the returned file is closed (or Unlock) or the process exits.
func Acquire(dir string, wait time.Duration, note LockWaitNote) (*os.File, error) {
	path := dir + ".lock"
	deadline := time.Now().Add(wait)
	noted := false
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("journal lock: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			if lockedCurrent(f, path) {
				// The holder's pid, for the messages of those who wait.
				if f.Truncate(0) == nil {
					_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
				}
				return f, nil
			}
			// The previous holder removed the file as it let go
			// (Unlock): lock the one at path now.
			f.Close()
			continue
		case !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR):
			f.Close()
			return nil, fmt.Errorf("journal lock %s: %w", path, err)
		}
		f.Close()
		holder := lockHolder(path)
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the journal %s is still held by another process (pid %d), a previous server of this mountpoint that has not finished closing: wait for it to exit, or end it", dir, holder)
		}
		if !noted && note != nil {
			note(holder)
			noted = true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedCurrent reports whether f is the file at path now.
func lockedCurrent(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// Unlock removes the lock file of a journal directory whose lock f is
// (the mount ended: nothing is left to own), then lets go of it. A
// process waiting for it finds the file gone and takes a new one.
func Unlock(f *os.File) {
	_ = os.Remove(f.Name())
	_ = f.Close()
}

// lockHolder returns the pid the lock file at path names (0: none).
func lockHolder(path string) int {
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
