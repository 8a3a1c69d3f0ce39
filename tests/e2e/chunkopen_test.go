package e2e

import (
	"os"
	"testing"
)

// TestFirstChunkAtOpen: an open hands the reader the first chunk's list
// when the mount's engine holds it at the generation the open read
// (meta.Opened): after another mount rewrote the file in place (the same
// size, so only the list tells), this mount's next open reads the new
// bytes, not those of the list it had cached from its own write.
func TestFirstChunkAtOpen(t *testing.T) {
	forEngines(t, testFirstChunkAtOpen)
}

func testFirstChunkAtOpen(t *testing.T, metaURL string) {
	a, b := twoMountsOn(t, metaURL)
	first, second := randBytes(1, 5000), randBytes(2, 5000)
	writeFile(t, a.Path("f"), first, 0o644)
	if got := readAll(t, a.Path("f")); string(got) != string(first) {
		t.Fatalf("read on a: %s", diffSummary(got, first))
	}
	f, err := os.OpenFile(b.Path("f"), os.O_WRONLY, 0)
	ok(t, err, "open on b")
	_, err = f.WriteAt(second, 0)
	ok(t, err, "rewrite on b")
	ok(t, f.Close(), "close on b")
	if got := readAll(t, a.Path("f")); string(got) != string(second) {
		t.Errorf("read on a after b rewrote the file and closed: %s", diffSummary(got, second))
	}
}
