package vm

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ofdLock is an OFD write lock (or unlock) of [start, start+n), the kind
// qemu takes on bytes 100+ and 200+ of an image.
func ofdLock(typ int16, start, n int64) *unix.Flock_t {
	return &unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
}

// openRW opens path read-write with O_DIRECT, as qemu with cache=none.
func openRW(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestOFDLocksAcrossMounts: F_OFD_SETLK, F_OFD_GETLK and F_OFD_SETLKW
// between open file descriptions on two mounts and within one process,
// and release when the description is closed.
func TestOFDLocksAcrossMounts(t *testing.T) {
	_, a, b := mountTwo(t)
	if err := os.WriteFile(a.Path("img.raw"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fa, fb := openRW(t, a.Path("img.raw")), openRW(t, b.Path("img.raw"))
	fa2 := openRW(t, a.Path("img.raw")) // same process, same mount, another description
	mustFcntl(t, fa, unix.F_OFD_SETLK, ofdLock(unix.F_WRLCK, 100, 1))

	probe := ofdLock(unix.F_WRLCK, 100, 1)
	mustFcntl(t, fb, unix.F_OFD_GETLK, probe)
	if probe.Type != unix.F_WRLCK || probe.Start != 100 || probe.Len != 1 {
		t.Errorf("F_OFD_GETLK through B = %+v, want the write lock on byte 100", *probe)
	}
	for name, f := range map[string]*os.File{"other mount": fb, "same process": fa2} {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, ofdLock(unix.F_RDLCK, 100, 1))
		if !errors.Is(err, syscall.EAGAIN) {
			t.Errorf("F_OFD_SETLK from the %s over a held lock: %v, want EAGAIN", name, err)
		}
	}
	mustFcntl(t, fb, unix.F_OFD_SETLK, ofdLock(unix.F_WRLCK, 200, 1)) // other bytes are free

	got := lockInBackground(fb, ofdLock(unix.F_WRLCK, 100, 1))
	select {
	case err := <-got:
		t.Fatalf("F_OFD_SETLKW returned (%v) while the lock is held", err)
	case <-time.After(300 * time.Millisecond):
	}
	mustFcntl(t, fa, unix.F_OFD_SETLK, ofdLock(unix.F_UNLCK, 100, 1))
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("F_OFD_SETLKW after unlock: %v", err)
		}
	case <-time.After(lockReleaseLimit):
		t.Fatalf("F_OFD_SETLKW still waiting %v after the unlock", lockReleaseLimit)
	}

	// Closing B's description without unlocking must release its locks.
	fb.Close()
	waitLockable(t, fa, 100)
	waitLockable(t, fa, 200)
}

// lockInBackground runs F_OFD_SETLKW on f and reports its result.
func lockInBackground(f *os.File, lk *unix.Flock_t) <-chan error {
	got := make(chan error, 1)
	go func() { got <- unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, lk) }()
	return got
}

// waitLockable waits up to lockReleaseLimit for an OFD write lock on byte
// at to succeed through f, then drops it.
func waitLockable(t *testing.T, f *os.File, at int64) {
	t.Helper()
	start := time.Now()
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, ofdLock(unix.F_WRLCK, at, 1))
		if err == nil {
			mustFcntl(t, f, unix.F_OFD_SETLK, ofdLock(unix.F_UNLCK, at, 1))
			return
		}
		if time.Since(start) > lockReleaseLimit {
			t.Fatalf("byte %d still locked %v after its holder's description was closed: %v", at, lockReleaseLimit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustFcntl(t *testing.T, f *os.File, cmd int, lk *unix.Flock_t) {
	t.Helper()
	if err := unix.FcntlFlock(f.Fd(), cmd, lk); err != nil {
		t.Fatalf("fcntl %d %+v: %v", cmd, *lk, err)
	}
}
