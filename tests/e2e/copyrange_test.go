package e2e

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCopyFileRange(t *testing.T) {
	m := mountFresh(t)
	src := randBytes(41, 9<<20+7)
	writeFile(t, m.Path("src"), src, 0o644)
	writeFile(t, m.Path("dst"), randBytes(42, 2<<20), 0o644)
	dst := readFile(t, m.Path("dst"))

	in, err := os.Open(m.Path("src"))
	ok(t, err, "open src")
	defer in.Close()
	out, err := os.OpenFile(m.Path("dst"), os.O_RDWR, 0)
	ok(t, err, "open dst")
	defer out.Close()
	copies := []struct{ from, to, n int64 }{
		{0, 0, 4 << 20},              // whole block at the start
		{123, 1<<20 + 5, 3 << 20},    // unaligned, grows the file
		{8 << 20, 12 << 20, 2 << 20}, // past the dst end (hole before), short at src end
	}
	for _, c := range copies {
		total := int64(0)
		for total < c.n {
			roff, woff := c.from+total, c.to+total
			n, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(c.n-total), 0)
			ok(t, err, "copy_file_range")
			if n == 0 {
				break // source ended
			}
			total += int64(n)
		}
		end := min(c.from+c.n, int64(len(src)))
		dst = patch(dst, c.to, src[c.from:end])
	}
	ok(t, out.Sync(), "fsync")
	wantContent(t, m.Path("dst"), dst)
	// Writes to the source afterwards must not show in the copy.
	writeFile(t, m.Path("src"), make([]byte, 100), 0o644)
	wantContent(t, m.Path("dst"), dst)
	ok(t, out.Close(), "close dst")
	ok(t, in.Close(), "close src")
	m = m.Remount(t)
	wantContent(t, m.Path("dst"), dst)
}

// patch writes b into buf at off, growing buf (with zeros) as needed.
func patch(buf []byte, off int64, b []byte) []byte {
	if end := off + int64(len(b)); end > int64(len(buf)) {
		buf = append(buf, make([]byte, end-int64(len(buf)))...)
	}
	copy(buf[off:], b)
	return buf
}
