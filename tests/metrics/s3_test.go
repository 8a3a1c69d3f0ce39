package metrics_test

import (
	"testing"

	"shoal/internal/object"
	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestObjectCountersS3: on an S3 store (MinIO), writing n bytes in 1 MiB
// blocks puts one object per block, and a fresh mount reading them back
// gets each; the put bytes are the blocks' stored sizes.
func TestObjectCountersS3(t *testing.T) {
	const blocks, n = 3, 2<<20 + 1000 // 1 MiB, 1 MiB, 1000 bytes
	data := pattern(n)
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{
		FormatArgs:      []string{"--storage", "s3", "--bucket", isolate.S3Prefix(t, testutil.S3URL(t))},
		ExtraFormatArgs: []string{"--block-size", "1M"},
	})
	m := v.Mount(t, "--metrics", "127.0.0.1:0", "--backup-interval", "0")
	url := endpoint(t, m)
	s0 := scrape(t, url)
	writeFiles(t, m, 0, data)
	s1 := settled(t, url)
	if got := objDelta(s0, s1, "put"); got.Count != blocks || got.Errors != 0 || got.Seconds <= 0 {
		t.Errorf("object puts moved by %+v, want %d without errors", got, blocks)
	}
	want := 2*object.StoredSize(1<<20) + object.StoredSize(1000)
	if got := s1.PutBytes - s0.PutBytes; got != want {
		t.Errorf("object put bytes moved by %d, want %d (the blocks' stored sizes)", got, want)
	}
	m.Unmount(t)

	m = v.Mount(t, "--metrics", "127.0.0.1:0", "--backup-interval", "0")
	url = endpoint(t, m)
	s0 = scrape(t, url)
	readBack(t, m, data)
	s1 = settled(t, url)
	if got := objDelta(s0, s1, "get"); got.Count < blocks || got.Count > 2*blocks || got.Errors != 0 {
		t.Errorf("object gets moved by %+v reading %d blocks", got, blocks)
	}
	// A miss is a block fetch sent to the store, by a read or by its
	// read-ahead (a read joining a fetch in flight is not one): each block
	// once, twice at most where a ranged read and a whole fetch overlap.
	if got := s1.CacheMisses - s0.CacheMisses; got < blocks || got > 2*blocks {
		t.Errorf("cache misses moved by %d reading %d blocks once", got, blocks)
	}
}
