package e2e

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// TestBigSparseFile writes past 4 GiB and 5 GiB (a sparse file: no data in
// between) and checks sizes, the data and the hole, also after a remount.
func TestBigSparseFile(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("big")
	const off5G = 5 << 30
	marks := map[int64][]byte{
		4<<30 - 3:         []byte("across-4GiB"),
		off5G:             []byte("hello at 5 GiB"),
		64<<20*70 - 2:     []byte("chunk-edge"),
		off5G + (4<<20)*3: randBytes(11, 5<<20),
	}
	f, err := os.Create(p)
	ok(t, err, "create")
	var end int64
	for off, b := range marks {
		_, err := f.WriteAt(b, off)
		ok(t, err, "pwrite")
		end = max(end, off+int64(len(b)))
	}
	ok(t, f.Close(), "close")
	check := func(p string) {
		t.Helper()
		if st := stat(t, p); st.Size != end {
			t.Errorf("size %d, want %d", st.Size, end)
		}
		f, err := os.Open(p)
		ok(t, err, "open")
		defer f.Close()
		for off, want := range marks {
			got := make([]byte, len(want))
			_, err := f.ReadAt(got, off)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("read at %d: %v %s", off, err, diffSummary(got, want))
			}
		}
		hole := make([]byte, 1<<20)
		_, err = f.ReadAt(hole, 1<<30)
		if err != nil || !bytes.Equal(hole, make([]byte, len(hole))) {
			t.Errorf("hole at 1 GiB: %v, not zeros", err)
		}
		n, err := f.ReadAt(make([]byte, 10), end)
		if n != 0 || err != io.EOF {
			t.Errorf("read at EOF %d = %d %v", end, n, err)
		}
	}
	check(p)
	m = m.Remount(t)
	check(m.Path("big"))
}

// TestChunkBoundary writes 70 MiB sequentially (over the 64 MiB chunk edge
// and many 4 MiB blocks) and reads it back cold after a remount.
func TestChunkBoundary(t *testing.T) {
	m := mountFresh(t)
	data := randBytes(12, 70<<20)
	writeFile(t, m.Path("seq"), data, 0o644)
	wantContent(t, m.Path("seq"), data)
	m = m.Remount(t)
	wantContent(t, m.Path("seq"), data)
}
