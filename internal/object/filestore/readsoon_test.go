package filestore

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/object"
	"shoal/internal/testutil"
)

// directWorks reports whether dir's file system takes O_DIRECT opens.
func directWorks(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY|unix.O_DIRECT, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(filepath.Join(dir, "probe"))
	return true
}

// TestPutReadSoonCaches: an object put with object.WithReadSoon is in the
// page cache afterwards; one put without it was written around it (where
// the file system supports O_DIRECT).
func TestPutReadSoonCaches(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if err := s.Put(object.WithReadSoon(ctx), "soon", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "later", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if r := testutil.Resident(t, s.path("soon")); r < 0.99 {
		t.Errorf("read-soon object: %.0f%% of its pages cached, want all", 100*r)
	}
	if !directWorks(s.root) {
		t.Skipf("%s refuses O_DIRECT: objects always go through the page cache", s.root)
	}
	if r := testutil.Resident(t, s.path("later")); r > 0.01 {
		t.Errorf("object without the hint: %.0f%% of its pages cached, want none (written with O_DIRECT)", 100*r)
	}
}

// TestPutSmallThroughCache: an object under directMin (a 4 KiB block with
// its checksum header and trailer) goes through the page cache, on the
// atomic path and the fresh one alike, so that its fsync writes it in one
// request rather than after an O_DIRECT write of its aligned part. The
// test needs a file system that takes O_DIRECT (elsewhere every object
// goes through the page cache).
func TestPutSmallThroughCache(t *testing.T) {
	s := newStore(t)
	if !directWorks(s.root) {
		t.Skipf("%s refuses O_DIRECT: objects always go through the page cache", s.root)
	}
	var directs []string
	testHookDirect = func(f *os.File) { directs = append(directs, f.Name()) }
	defer func() { testHookDirect = nil }()
	ctx := context.Background()
	small := bytes.Repeat([]byte("x"), 4096+32)
	if err := s.Put(ctx, "small", bytes.NewReader(small), int64(len(small))); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(object.WithFreshKey(ctx), "fresh/small", bytes.NewReader(small), int64(len(small))); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"small", "fresh/small"} {
		if r := testutil.Resident(t, s.path(k)); r < 0.99 {
			t.Errorf("%s (%d bytes): %.0f%% of its pages cached, want all (written through the page cache)", k, len(small), 100*r)
		}
	}
	if len(directs) != 0 {
		t.Errorf("small objects written with O_DIRECT: %v", directs)
	}
	big := bytes.Repeat([]byte("y"), directMin)
	if err := s.Put(object.WithFreshKey(ctx), "fresh/big", bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatal(err)
	}
	if len(directs) != 1 {
		t.Errorf("an object of directMin bytes: O_DIRECT turned on for %v, want it alone", directs)
	}
}

// TestSmallGetReadsItsRange: a ranged Get below randomRead asks the kernel
// for its whole range at once, although its file is hinted random (no
// read-ahead): reading the first bytes of it brings the rest in with
// them, one disk request instead of one per piece the caller reads.
func TestSmallGetReadsItsRange(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<10) // 64 KiB
	if err := s.Put(ctx, "obj", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(s.path("obj"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if r := testutil.Resident(t, s.path("obj")); r > 0.01 {
		t.Skipf("the object's pages stay cached after FADV_DONTNEED (%.0f%%)", 100*r)
	}
	rc, err := s.Get(ctx, "obj", 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var head [20]byte
	if _, err := io.ReadFull(rc, head[:]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		r := testutil.Resident(t, s.path("obj"))
		if r >= 0.99 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after reading 20 bytes of a 64 KiB ranged Get, %.0f%% of the object is in memory, want all of it read at once", 100*r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
