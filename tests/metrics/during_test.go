package metrics_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"shoal/internal/metrics"
	"shoal/internal/testutil"
)

// until scrapes url until ok holds of a scrape, failing with what after
// the deadline; it returns the first scrape that satisfied ok.
func until(t *testing.T, url, what string, ok func(metrics.Snapshot) bool) metrics.Snapshot {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := scrape(t, url)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never seen; last scrape %+v", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGaugesDuringWorkload scrapes a mount in the middle of its work:
// lookups of missing names count as lookup errors, one each; a file held
// open with a flock and an unflushed write shows in the write buffer,
// open files and locked files, which drop back to zero after the close;
// a second direct read of a file is served by the read cache; a deleted
// file's data waits in the cleaner backlog.
func TestGaugesDuringWorkload(t *testing.T) {
	v := testutil.NewVolume(t)
	m := v.Mount(t, "--metrics", "127.0.0.1:0", "--delete-delay", "1h")
	url := endpoint(t, m)

	const missing = 5
	s0 := scrape(t, url)
	for i := 0; i < missing; i++ {
		if _, err := os.Stat(m.Path(fmt.Sprintf("missing-%d", i))); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat of a missing name: %v", err)
		}
	}
	s1 := scrape(t, url)
	if got := delta(s0, s1, "lookup"); got.Count != missing || got.Errors != missing {
		t.Errorf("lookup moved by %+v for %d missing names, want %d requests, all errors (ENOENT)", got, missing, missing)
	}

	f, err := os.OpenFile(m.Path("held"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	const buffered = 64 << 10
	if _, err := f.Write(pattern(buffered)); err != nil {
		t.Fatal(err)
	}
	during := until(t, url, "the held file open, locked, its write buffered", func(s metrics.Snapshot) bool {
		return s.OpenHandles >= 1 && s.OpenFiles >= 1 && s.LockedFiles >= 1 && s.BufferBytes >= buffered
	})
	if during.OpenFiles != 1 || during.LockedFiles != 1 || during.BufferBytes > during.BufferLimit {
		t.Errorf("while one file is held: open files %d, locked files %d, buffer %d of %d",
			during.OpenFiles, during.LockedFiles, during.BufferBytes, during.BufferLimit)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	until(t, url, "the held file closed, unlocked and flushed", func(s metrics.Snapshot) bool {
		return s.OpenHandles == 0 && s.OpenFiles == 0 && s.LockedFiles == 0 && s.BufferBytes == 0
	})

	const n = 3<<20 + 5
	data := pattern(n)
	if err := os.WriteFile(m.Path("big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := settled(t, url)
	directRead(t, m.Path("big"), data)
	s3 := settled(t, url)
	directRead(t, m.Path("big"), data)
	s4 := settled(t, url)
	if got := s4.ReadBytes - s3.ReadBytes; got != n || s3.ReadBytes-s2.ReadBytes != n {
		t.Errorf("direct reads of %d bytes moved read bytes by %d, then %d", n, s3.ReadBytes-s2.ReadBytes, got)
	}
	if hits, misses := s4.CacheHits-s3.CacheHits, s4.CacheMisses-s3.CacheMisses; hits < 1 || misses != 0 {
		t.Errorf("the second read of a %d-byte file: %d cache hits, %d misses; want hits and no miss", n, hits, misses)
	}
	if got := objDelta(s3, s4, "get"); got.Count != 0 {
		t.Errorf("the second read went to the store %d times", got.Count)
	}

	if err := os.Remove(m.Path("big")); err != nil {
		t.Fatal(err)
	}
	until(t, url, "the deleted file's data in the cleaner backlog", func(s metrics.Snapshot) bool { return s.Cleaner >= 1 })
}

// directRead reads path with O_DIRECT, which the mount answers with
// direct I/O: every byte is a FUSE read, none comes from the page cache.
func directRead(t *testing.T, path string, want []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got bytes.Buffer
	if _, err := io.CopyBuffer(&got, f, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes that differ from the %d written", got.Len(), len(want))
	}
}
