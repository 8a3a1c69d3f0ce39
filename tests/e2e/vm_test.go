package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// requireTool skips t when an external program is missing, or fails it in
// CI (SHOAL_REQUIRE_FUSE=1), where scripts/test.sh installs it.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("SHOAL_REQUIRE_FUSE") == "1" {
			t.Fatalf("%s not installed (scripts/test.sh installs it)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// TestODirect writes and reads with O_DIRECT (as qemu's cache=none and
// databases do) at aligned offsets, and checks the data after a remount.
func TestODirect(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("direct")
	const size = 3<<20 + 4096*5
	buf := alignedBuf(size)
	copy(buf, randBytes(91, size))
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_RDWR|unix.O_DIRECT, 0o644)
	ok(t, err, "open O_DIRECT")
	_, err = unix.Pwrite(fd, buf, 0)
	ok(t, err, "pwrite O_DIRECT")
	patch := alignedBuf(8192)
	copy(patch, bytes.Repeat([]byte{0x5a}, 8192))
	_, err = unix.Pwrite(fd, patch, 1<<20)
	ok(t, err, "pwrite O_DIRECT overwrite")
	want := append([]byte(nil), buf...)
	copy(want[1<<20:], patch)
	got := alignedBuf(size)
	n, err := unix.Pread(fd, got, 0)
	if err != nil || n != size || !bytes.Equal(got, want) {
		t.Errorf("pread O_DIRECT: n=%d err=%v %s", n, err, diffSummary(got[:max(n, 0)], want))
	}
	ok(t, unix.Fsync(fd), "fsync")
	ok(t, unix.Close(fd), "close")
	m = m.Remount(t)
	wantContent(t, m.Path("direct"), want)
}

// alignedBuf returns n bytes aligned to 4096, as O_DIRECT requires.
func alignedBuf(n int) []byte {
	raw := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&raw[0]))%4096)
	return raw[off%4096 : off%4096+n]
}

// TestQemuImage creates a qcow2 image on the mount, writes patterns into
// it with qemu-io through cache=none (O_DIRECT), and checks the image and
// the patterns after a remount: the VM-image workload in small.
func TestQemuImage(t *testing.T) {
	img := requireTool(t, "qemu-img")
	qio := requireTool(t, "qemu-io")
	m := mountFresh(t)
	p := m.Path("vm.qcow2")
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(img, "create", "-q", "-f", "qcow2", p, "2G")
	writes := []string{"write -P 0xa1 0 4M", "write -P 0xb2 1G 1M", "write -P 0xc3 64K 64K", "write -P 0xd4 2047M 1M"}
	args := []string{"-t", "none", "-f", "qcow2"}
	for _, w := range writes {
		args = append(args, "-c", w)
	}
	run(qio, append(args, p)...)
	m = m.Remount(t)
	p = m.Path("vm.qcow2")
	run(img, "check", "-q", p)
	reads := []string{"read -P 0xa1 0 64K", "read -P 0xc3 64K 64K", "read -P 0xa1 128K 3968K", "read -P 0xb2 1G 1M", "read -P 0xd4 2047M 1M", "read -P 0 8M 1M"}
	args = []string{"-t", "none", "-f", "qcow2"}
	for _, r := range reads {
		args = append(args, "-c", r)
	}
	out := run(qio, append(args, p)...)
	if strings.Contains(out, "Pattern verification failed") {
		t.Errorf("qemu-io pattern check failed:\n%s", out)
	}
	var st syscall.Stat_t
	ok(t, syscall.Stat(p, &st), "stat image")
	if st.Blocks*512 > 64<<20 {
		t.Logf("image of %d bytes occupies %d bytes", st.Size, st.Blocks*512)
	}
}
