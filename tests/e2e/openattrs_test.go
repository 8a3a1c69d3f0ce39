package e2e

import (
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// opCount is how many requests of op mount m has served ('shoal stats').
func opCount(t *testing.T, m *testutil.Mount, op string) int {
	t.Helper()
	var st struct {
		Ops map[string]struct{ Count int } `json:"ops"`
	}
	out := testutil.MustRun(t, "stats", "--once", "--json", m.Dir).Stdout
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	return st.Ops[op].Count
}

// readAll opens path, reads it with one large buffer, as cat or a
// benchmark does, and closes it.
func readAll(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	ok(t, err, "open")
	defer f.Close()
	var out []byte
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
		ok(t, err, "read")
	}
}

// TestOpenKeepsFreshAttributes: a file the kernel has just looked up for
// the first time is opened and read without a GETATTR (the open does not
// drop attributes the kernel holds for certain, fusefs/kattrs.go), and an
// open still drops attributes the kernel cached before another mount
// changed the file, so the read sees the new size (close-to-open). On
// every engine.
func TestOpenKeepsFreshAttributes(t *testing.T) {
	forEngines(t, testOpenKeepsFreshAttributes)
}

func testOpenKeepsFreshAttributes(t *testing.T, metaURL string) {
	a, b := twoMountsOn(t, metaURL, "--metrics", "127.0.0.1:0")
	first := randBytes(1, 5000)
	writeFile(t, a.Path("f"), first, 0o644)

	stat(t, b.Dir) // the root's attributes, which the path walk needs, are fresh
	before := opCount(t, b, "getattr")
	if got := readAll(t, b.Path("f")); string(got) != string(first) {
		t.Fatalf("read on the other mount: %s", diffSummary(got, first))
	}
	if n := opCount(t, b, "getattr") - before; n != 0 {
		t.Errorf("open and read of a file first looked up: %d GETATTR requests, want 0", n)
	}

	// b's kernel now caches f's size for a second; a appends and closes.
	if st := stat(t, b.Path("f")); st.Size != int64(len(first)) {
		t.Fatalf("size on b %d, want %d", st.Size, len(first))
	}
	f, err := os.OpenFile(a.Path("f"), os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open for append")
	more := randBytes(2, 3000)
	_, err = f.Write(more)
	ok(t, err, "append")
	ok(t, f.Close(), "close")
	start := time.Now()
	want := append(append([]byte(nil), first...), more...)
	if got := readAll(t, b.Path("f")); string(got) != string(want) {
		t.Errorf("read on b after a's append and close: %s", diffSummary(got, want))
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Logf("slow machine: the read may have come after the attribute timeout, proving less")
	}
}
