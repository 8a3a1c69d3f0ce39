package e2e

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCapsSeenAtOpen: what a mount knows of a file's security.capability
// (none, learnt by the open's own engine read, meta.Opened) is as of that
// open: a capability another mount sets is seen by the next open here,
// even while an earlier handle, which learnt there was none, stays open;
// and a write through that next open drops it, as on a local disk.
func TestCapsSeenAtOpen(t *testing.T) {
	forEngines(t, testCapsSeenAtOpen)
}

func testCapsSeenAtOpen(t *testing.T, metaURL string) {
	const caps = "security.capability"
	a, b := twoMountsOn(t, metaURL)
	writeFile(t, a.Path("f"), []byte("data"), 0o644)
	held, err := os.OpenFile(a.Path("f"), os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open on a")
	defer held.Close()
	_, err = held.Write([]byte("x")) // the kernel asks for security.capability first
	ok(t, err, "write on a")
	buf := make([]byte, 64)
	if _, err := unix.Getxattr(a.Path("f"), caps, buf); err != unix.ENODATA {
		t.Fatalf("%s on a before any was set: %v, want ENODATA", caps, err)
	}

	v := fileCaps()
	ok(t, unix.Setxattr(b.Path("f"), caps, v, 0), "setxattr on b")
	again, err := os.Open(a.Path("f"))
	ok(t, err, "reopen on a")
	n, err := unix.Getxattr(a.Path("f"), caps, buf)
	if err != nil || !bytes.Equal(buf[:n], v) {
		t.Errorf("%s on a after b set it and a reopened: %x, %v; want %x", caps, buf[:max(n, 0)], err, v)
	}
	ok(t, again.Close(), "close")
}
