package e2e

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSharedMmap writes through a MAP_SHARED mapping, msyncs, unmaps, and
// checks the data through read(2), after dropping the page cache, and after
// a remount.
func TestSharedMmap(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("mm")
	const size = 5<<20 + 123 // spans two 4 MiB blocks, ends mid-page
	data := randBytes(21, size)
	writeFile(t, p, data, 0o644)

	f, err := os.OpenFile(p, os.O_RDWR, 0)
	ok(t, err, "open")
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	ok(t, err, "mmap MAP_SHARED")
	if !bytes.Equal(mem[:4096], data[:4096]) {
		t.Error("mapping does not show the file's data")
	}
	for _, off := range []int{0, 4095, 4<<20 - 1, 4 << 20, size - 1} {
		mem[off] ^= 0xff
		data[off] ^= 0xff
	}
	copy(mem[1<<20:], "written through mmap")
	copy(data[1<<20:], "written through mmap")
	ok(t, unix.Msync(mem, unix.MS_SYNC), "msync")
	ok(t, unix.Munmap(mem), "munmap")
	got := make([]byte, size)
	_, err = f.ReadAt(got, 0)
	ok(t, err, "read")
	if !bytes.Equal(got, data) {
		t.Errorf("read(2) after munmap: %s", diffSummary(got, data))
	}
	ok(t, f.Close(), "close")
	dropCache(t, p)
	wantContent(t, p, data)
	m = m.Remount(t)
	wantContent(t, m.Path("mm"), data)
}

// TestMmapExtend maps past a file's end after ftruncate grows it, as
// databases do, and writes the new area through the mapping.
func TestMmapExtend(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("grow")
	f, err := os.Create(p)
	ok(t, err, "create")
	ok(t, f.Truncate(1<<20), "ftruncate up")
	mem, err := unix.Mmap(int(f.Fd()), 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	ok(t, err, "mmap")
	want := make([]byte, 1<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = byte(i / 4096)
		want[i] = byte(i / 4096)
	}
	ok(t, unix.Munmap(mem), "munmap without msync")
	ok(t, f.Sync(), "fsync")
	ok(t, f.Close(), "close")
	m = m.Remount(t)
	wantContent(t, m.Path("grow"), want)
}

// testMmapRoundTrip writes a page pattern through a shared mapping of a new
// file and reads it back with read(2).
func testMmapRoundTrip(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	ok(t, err, "create")
	defer f.Close()
	ok(t, f.Truncate(256<<10), "ftruncate")
	mem, err := unix.Mmap(int(f.Fd()), 0, 256<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	ok(t, err, "mmap")
	want := make([]byte, 256<<10)
	for i := 0; i < len(want); i += 512 {
		mem[i], want[i] = byte(i>>9), byte(i>>9)
	}
	ok(t, unix.Msync(mem, unix.MS_SYNC), "msync")
	ok(t, unix.Munmap(mem), "munmap")
	got := make([]byte, len(want))
	_, err = f.ReadAt(got, 0)
	ok(t, err, "read")
	if !bytes.Equal(got, want) {
		t.Errorf("mmap round trip: %s", diffSummary(got, want))
	}
}
