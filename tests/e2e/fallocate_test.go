package e2e

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFallocate(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("fa")
	data := randBytes(31, 1<<20)
	writeFile(t, p, data, 0o644)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	ok(t, err, "open")
	defer f.Close()
	fd := int(f.Fd())

	ok(t, unix.Fallocate(fd, 0, 0, 3<<20), "fallocate mode 0")
	if st := fstat(t, f); st.Size != 3<<20 {
		t.Errorf("size after fallocate mode 0 = %d, want %d", st.Size, 3<<20)
	}
	want := append(append([]byte{}, data...), make([]byte, 2<<20)...)
	ok(t, unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, 8<<20), "fallocate KEEP_SIZE")
	if st := fstat(t, f); st.Size != 3<<20 {
		t.Errorf("size after KEEP_SIZE = %d, want unchanged %d", st.Size, 3<<20)
	}
	err = unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 4096, 100000)
	ok(t, err, "fallocate PUNCH_HOLE|KEEP_SIZE")
	clear(want[4096 : 4096+100000])
	if st := fstat(t, f); st.Size != 3<<20 {
		t.Errorf("size after punch hole = %d", st.Size)
	}
	got := make([]byte, len(want))
	_, err = f.ReadAt(got, 0)
	ok(t, err, "read")
	if string(got) != string(want) {
		t.Errorf("after punch hole: %s", diffSummary(got, want))
	}
	wantErrno(t, unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE, 0, 10), syscall.EOPNOTSUPP, "PUNCH_HOLE without KEEP_SIZE")
	err = unix.Fallocate(fd, unix.FALLOC_FL_COLLAPSE_RANGE, 0, 4096)
	if err != nil && !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("COLLAPSE_RANGE: %v, want success or EOPNOTSUPP", err)
	}
	if err == nil {
		t.Log("COLLAPSE_RANGE is supported; content not checked here")
		return
	}
	ok(t, f.Close(), "close")
	m = m.Remount(t)
	wantContent(t, m.Path("fa"), want)
}
