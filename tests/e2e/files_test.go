package e2e

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

func TestFiles(t *testing.T) {
	m := mountFresh(t)
	t.Run("CreateExcl", func(t *testing.T) { filesCreateExcl(t, m) })
	t.Run("CreateExisting", func(t *testing.T) { filesCreateExisting(t, m) })
	t.Run("OpenMissing", func(t *testing.T) { filesOpenMissing(t, m) })
	t.Run("Trunc", func(t *testing.T) { filesTrunc(t, m) })
	t.Run("Append", func(t *testing.T) { filesAppend(t, m) })
	t.Run("AppendTwoHandles", func(t *testing.T) { filesAppendTwoHandles(t, m) })
	t.Run("ReadEOF", func(t *testing.T) { filesReadEOF(t, m) })
	t.Run("WriteHole", func(t *testing.T) { filesWriteHole(t, m) })
	t.Run("BadFD", func(t *testing.T) { filesBadFD(t, m) })
	t.Run("FsyncFlushRelease", func(t *testing.T) { testFsync(t, m.Path("fsync"), m.Vol.BlockObjects) })
}

func filesCreateExcl(t *testing.T, m *testutil.Mount) {
	p := m.Path("excl")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	ok(t, err, "create O_EXCL")
	ok(t, f.Close(), "close")
	if st := stat(t, p); st.Mode != syscall.S_IFREG|0o640 || st.Size != 0 || st.Nlink != 1 {
		t.Errorf("new file: mode %o size %d nlink %d", st.Mode, st.Size, st.Nlink)
	}
	_, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	wantErrno(t, err, syscall.EEXIST, "second O_CREAT|O_EXCL")
}

func filesCreateExisting(t *testing.T, m *testutil.Mount) {
	p := m.Path("existing")
	writeFile(t, p, []byte("keep me"), 0o600)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o777)
	ok(t, err, "O_CREAT on existing")
	ok(t, f.Close(), "close")
	wantContent(t, p, []byte("keep me"))
	if st := stat(t, p); st.Mode&0o777 != 0o600 {
		t.Errorf("O_CREAT on existing changed mode to %o", st.Mode&0o777)
	}
}

func filesOpenMissing(t *testing.T, m *testutil.Mount) {
	_, err := os.Open(m.Path("missing"))
	wantErrno(t, err, syscall.ENOENT, "open missing")
}

func filesTrunc(t *testing.T, m *testutil.Mount) {
	p := m.Path("trunc")
	writeFile(t, p, bytes.Repeat([]byte("a"), 100000), 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	ok(t, err, "open O_TRUNC")
	if st := fstat(t, f); st.Size != 0 {
		t.Errorf("size after O_TRUNC = %d", st.Size)
	}
	_, err = f.Write([]byte("new"))
	ok(t, err, "write")
	ok(t, f.Close(), "close")
	wantContent(t, p, []byte("new"))
}

func filesAppend(t *testing.T, m *testutil.Mount) {
	p := m.Path("append")
	writeFile(t, p, []byte("abc"), 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open O_APPEND")
	_, err = f.Seek(0, io.SeekStart)
	ok(t, err, "seek")
	_, err = f.Write([]byte("def"))
	ok(t, err, "write 1")
	_, err = f.Write([]byte("ghi"))
	ok(t, err, "write 2")
	ok(t, f.Close(), "close")
	wantContent(t, p, []byte("abcdefghi"))
}

func filesAppendTwoHandles(t *testing.T, m *testutil.Mount) {
	p := m.Path("append2")
	a, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	ok(t, err, "open a")
	b, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open b")
	for i := 0; i < 50; i++ {
		_, err = a.Write([]byte("A"))
		ok(t, err, "write a")
		_, err = b.Write([]byte("B"))
		ok(t, err, "write b")
	}
	ok(t, a.Close(), "close a")
	ok(t, b.Close(), "close b")
	wantContent(t, p, bytes.Repeat([]byte("AB"), 50))
}

func filesReadEOF(t *testing.T, m *testutil.Mount) {
	p := m.Path("eof")
	writeFile(t, p, []byte("0123456789"), 0o644)
	f, err := os.Open(p)
	ok(t, err, "open")
	defer f.Close()
	buf := make([]byte, 20)
	n, err := f.ReadAt(buf, 5)
	if n != 5 || err != io.EOF || string(buf[:5]) != "56789" {
		t.Errorf("ReadAt(5) = %d %v %q", n, err, buf[:n])
	}
	n, err = syscall.Pread(int(f.Fd()), buf, 10)
	if n != 0 || err != nil {
		t.Errorf("pread at EOF = %d %v, want 0 nil", n, err)
	}
	n, err = syscall.Pread(int(f.Fd()), buf, 1<<40)
	if n != 0 || err != nil {
		t.Errorf("pread far past EOF = %d %v, want 0 nil", n, err)
	}
}

func filesWriteHole(t *testing.T, m *testutil.Mount) {
	p := m.Path("hole")
	f, err := os.Create(p)
	ok(t, err, "create")
	_, err = f.WriteAt([]byte("end"), 100000)
	ok(t, err, "pwrite past EOF")
	ok(t, f.Close(), "close")
	want := make([]byte, 100003)
	copy(want[100000:], "end")
	wantContent(t, p, want)
}

func filesBadFD(t *testing.T, m *testutil.Mount) {
	p := m.Path("badfd")
	writeFile(t, p, []byte("x"), 0o644)
	f, err := os.Open(p)
	ok(t, err, "open")
	_, err = syscall.Write(int(f.Fd()), []byte("y"))
	wantErrno(t, err, syscall.EBADF, "write on O_RDONLY")
	f.Close()
	f, err = os.OpenFile(p, os.O_WRONLY, 0)
	ok(t, err, "open")
	_, err = syscall.Read(int(f.Fd()), make([]byte, 1))
	wantErrno(t, err, syscall.EBADF, "read on O_WRONLY")
	f.Close()
}

func testFsync(t *testing.T, p string, objects func(testing.TB) []string) {
	before := len(objects(t))
	f, err := os.Create(p)
	ok(t, err, "create")
	data := randBytes(7, 1<<20)
	_, err = f.Write(data)
	ok(t, err, "write")
	ok(t, f.Sync(), "fsync")
	ok(t, unix.Fdatasync(int(f.Fd())), "fdatasync")
	if after := len(objects(t)); after <= before {
		t.Errorf("no new object in the bucket after fsync of 1 MiB (%d before, %d after)", before, after)
	}
	// Flush (close of a dup) must not end the handle.
	dup, err := unix.Dup(int(f.Fd()))
	ok(t, err, "dup")
	ok(t, unix.Close(dup), "close dup (flush)")
	_, err = f.WriteAt([]byte("tail"), int64(len(data)))
	ok(t, err, "write after flush")
	ok(t, f.Close(), "close (release)")
	wantContent(t, p, append(data, "tail"...))
}

func TestWriteSizes(t *testing.T) {
	m := mountFresh(t)
	sizes := []int{0, 1, 4095, 4096, 4097, 128<<10 + 1, 1 << 20, 4<<20 - 1, 4 << 20, 4<<20 + 1, 9<<20 + 333}
	for i, n := range sizes {
		p := m.Path("size", "f"+string(rune('a'+i)))
		_ = os.MkdirAll(m.Path("size"), 0o755)
		data := randBytes(uint64(n), n)
		writeFile(t, p, data, 0o644)
		if st := stat(t, p); st.Size != int64(n) {
			t.Errorf("size %d: stat says %d", n, st.Size)
		}
		dropCache(t, p)
		wantContent(t, p, data)
	}
}

func TestOverwrite(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("over")
	data := randBytes(1, 10<<20)
	writeFile(t, p, data, 0o644)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	ok(t, err, "open")
	// Small and large overwrites across block (4 MiB) boundaries.
	for _, w := range []struct{ off, n int }{{0, 1}, {4<<20 - 10, 20}, {3 << 20, 2 << 20}, {10<<20 - 5, 5}, {123457, 77777}} {
		patch := randBytes(uint64(w.off), w.n)
		_, err := f.WriteAt(patch, int64(w.off))
		ok(t, err, "overwrite")
		copy(data[w.off:], patch)
	}
	ok(t, f.Close(), "close")
	wantContent(t, p, data)
	dropCache(t, p)
	wantContent(t, p, data)
	m = m.Remount(t)
	wantContent(t, m.Path("over"), data)
}

func TestTruncate(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("t")
	data := randBytes(3, 6<<20)
	writeFile(t, p, data, 0o644)
	ok(t, os.Truncate(p, 5<<20), "truncate down")
	wantContent(t, p, data[:5<<20])
	ok(t, os.Truncate(p, 100), "truncate down more")
	ok(t, os.Truncate(p, 7<<20), "truncate up")
	want := make([]byte, 7<<20)
	copy(want, data[:100])
	wantContent(t, p, want) // old bytes past 100 must not reappear
	dropCache(t, p)
	wantContent(t, p, want)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	ok(t, err, "open")
	ok(t, f.Truncate(0), "ftruncate 0")
	if st := fstat(t, f); st.Size != 0 {
		t.Errorf("size after ftruncate 0 = %d", st.Size)
	}
	ok(t, f.Truncate(4096), "ftruncate up")
	ok(t, f.Close(), "close")
	wantContent(t, p, make([]byte, 4096))
	m = m.Remount(t)
	wantContent(t, m.Path("t"), make([]byte, 4096))
}
