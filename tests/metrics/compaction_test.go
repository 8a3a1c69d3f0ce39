package metrics_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"shoal/internal/metrics"
	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestCompactionBacklog fragments two files' chunks with fsynced small
// overlapping writes until each is due for compaction, on MinIO behind a
// proxy that holds the compactions' large block puts (the small writes'
// puts pass). The compaction backlog then reads 2 — the chunk being
// compacted and the one queued behind it — for as long as the puts are
// held, and 0 once they are let through; the rewritten blocks were
// stored, and the files read back as written.
func TestCompactionBacklog(t *testing.T) {
	const (
		size   = 256 << 10 // each file: one chunk, one block
		small  = 4 << 10   // each fragmenting write
		writes = 40        // past the 32 slices that make a chunk due
	)
	s3 := testutil.S3URL(t)
	proxy := newS3Proxy(t, s3)
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{
		FormatArgs: []string{"--storage", "s3", "--bucket", proxy.URL(t, isolate.S3Prefix(t, s3))},
	})
	m := v.Mount(t, "--metrics", "127.0.0.1:0", "--backup-interval", "0")
	url := endpoint(t, m)
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string][]byte{}
	for _, name := range []string{"a", "b"} {
		model[name] = randomBytes(rng, size)
		if err := os.WriteFile(m.Path(name), model[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s := scrape(t, url); s.Compaction != 0 {
		t.Fatalf("compaction backlog %d before any fragmenting write", s.Compaction)
	}

	proxy.HoldPutsOver(size / 4)
	t.Cleanup(proxy.Release) // before the unmount, which waits for compaction
	for _, name := range []string{"a", "b"} {
		fragment(t, m.Path(name), model[name], rng, writes, small)
	}
	during := until(t, url, "both fragmented chunks in the compaction backlog", func(s metrics.Snapshot) bool { return s.Compaction >= 2 })
	if _, _, held := proxy.Counts(); held != 1 || during.Compaction != 2 {
		t.Errorf("while compaction is held: %d large puts held, backlog %d; want 1 and 2", held, during.Compaction)
	}
	proxy.Release()
	after := until(t, url, "the compaction backlog drained", func(s metrics.Snapshot) bool { return s.Compaction == 0 })
	if got := after.PutBytes - during.PutBytes; got < 2*size {
		t.Errorf("compaction stored %d bytes after the release, want both chunks rewritten (%d bytes at least)", got, 2*size)
	}
	m.Unmount(t)
	m = v.Mount(t, "--backup-interval", "0")
	for name, want := range model {
		if got, err := os.ReadFile(m.Path(name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after compaction: %d bytes, %v; differs from what was written", name, len(got), err)
		}
	}
}

// fragment makes n fsynced writes of size bytes to path at overlapping
// offsets, applying them to model too: one slice each.
func fragment(t *testing.T, path string, model []byte, rng *rand.Rand, n, size int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < n; i++ {
		off := (i % 16) * size / 2
		b := randomBytes(rng, size)
		copy(model[off:], b)
		if _, err := f.WriteAt(b, int64(off)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// randomBytes returns n bytes from rng (incompressible, unlike pattern).
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
