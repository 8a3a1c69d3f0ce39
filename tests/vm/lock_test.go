package vm

import (
	"strings"
	"testing"
	"time"
)

// lockError is how qemu reports an image another process holds.
const lockError = `Failed to get "write" lock`

// lockReleaseLimit bounds how long after its holder is gone a lock may
// still be seen through the other mount.
const lockReleaseLimit = 5 * time.Second

// TestImageLockAcrossMounts: qemu-io holding a qcow2 image read-write
// through mount A makes a read-write open through mount B fail with
// qemu's lock error (and B's open of another image still works); once the
// holder quits, B opens it. (qemu-io takes no write permission, so no
// lock, on a raw image until something writes; qemu with a guest disk
// does. The raw case is covered by TestOFDLocksAcrossMounts below.)
func TestImageLockAcrossMounts(t *testing.T) {
	_, a, b := mountTwo(t)
	image := a.Path("locked.qcow2")
	mustQemu(t, "qemu-img", "create", "-f", "qcow2", image, "64M")
	mustQemu(t, "qemu-img", "create", "-f", "qcow2", a.Path("free.qcow2"), "64M")
	h := holdImage(t, "qcow2", image)
	wantLocked(t, "qcow2", b.Path("locked.qcow2"))
	wantLocked(t, "qcow2", image) // a second qemu on the same host too
	qemuIO(t, "qcow2", cacheNone, b.Path("free.qcow2"), "write -P 1 0 4k")
	h.quit(t)
	wantOpens(t, "qcow2", b.Path("locked.qcow2"))
}

// TestImageLockKill9: a qemu-io killed with SIGKILL while holding an
// image leaves no lock behind: the kernel closes its file, and the open
// file description's (OFD) locks must go with it.
func TestImageLockKill9(t *testing.T) {
	_, a, b := mountTwo(t)
	image := a.Path("crash.qcow2")
	mustQemu(t, "qemu-img", "create", "-f", "qcow2", image, "64M")
	h := holdImage(t, "qcow2", image)
	wantLocked(t, "qcow2", b.Path("crash.qcow2"))
	h.kill9(t)
	wantOpens(t, "qcow2", b.Path("crash.qcow2"))
	wantOpens(t, "qcow2", image)
}

// wantLocked fails t unless a read-write qemu-io open of image fails
// with qemu's lock error.
func wantLocked(t *testing.T, format, image string) {
	t.Helper()
	out, err := qemu("qemu-io", ioArgs(format, cacheNone, image, "read 0 512")...)
	if err == nil {
		t.Fatalf("qemu-io opened %s read-write while another qemu-io holds it:\n%s", image, out)
	}
	if !strings.Contains(out, lockError) {
		t.Fatalf("qemu-io on %s failed, but not with the lock error:\n%v", image, err)
	}
}

// wantOpens waits up to lockReleaseLimit for a read-write open of image
// to succeed.
func wantOpens(t *testing.T, format, image string) {
	t.Helper()
	start := time.Now()
	for {
		out, err := qemu("qemu-io", ioArgs(format, cacheNone, image, "write -P 7 0 4k", "read -P 7 0 4k")...)
		if err == nil {
			t.Logf("%s opened read-write %v after its holder went", image, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > lockReleaseLimit {
			t.Fatalf("%s still not open read-write %v after its holder went:\n%s", image, lockReleaseLimit, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
