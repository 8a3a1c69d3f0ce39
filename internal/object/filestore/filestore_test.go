package filestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shoal/internal/object"
	"shoal/internal/object/objecttest"
	"shoal/internal/testutil"
)

func TestConformance(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return newStore(t) })
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("New(file) = %v, want error naming %s", err, file)
	}
	if _, err := New(""); err == nil {
		t.Fatal("New(\"\") succeeded")
	}
	if os.Geteuid() != 0 { // root can write anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		if _, err := New(ro); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Fatalf("New(read-only) = %v, want 'not writable'", err)
		}
	}
}

func TestInvalidKeys(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, key := range []string{"", "/abs", "trail/", "a//b", "../up", "a/./b", "a/../b", ".shoal-tmp-x", "a/.shoal-tmp-1", "nul\x00"} {
		err := s.Put(ctx, key, bytes.NewReader([]byte("x")), 1)
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Head(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Head(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(s.Root()))
	if len(entries) != 1 {
		t.Fatalf("invalid keys wrote outside the root: %v", entries)
	}
}

func TestKeyDirectoryClash(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	put := func(key string) error { return s.Put(ctx, key, bytes.NewReader([]byte("x")), 1) }
	if err := put("a/b"); err != nil {
		t.Fatal(err)
	}
	if err := put("a"); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Put(a) over directory a/ = %v, want ErrInvalidKey", err)
	}
	if err := put("a/b/c"); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Put(a/b/c) under file a/b = %v, want ErrInvalidKey", err)
	}
	if _, err := s.Head(ctx, "a"); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("Head(directory) = %v, want ErrNotExist", err)
	}
	if _, err := s.Get(ctx, "a/b/c", 0, -1); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("Get(under a file) = %v, want ErrNotExist", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete(directory) = %v, want nil", err)
	}
	if err := s.Delete(ctx, "a/b/c"); err != nil {
		t.Fatalf("Delete(under a file) = %v, want nil", err)
	}
	assertNoTemp(t, s)
}

func TestTempFilesHidden(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "d/x", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	// A leftover from a crash mid-Put.
	if err := os.WriteFile(filepath.Join(s.Root(), "d", tmpPrefix+"123"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	infos, err := s.List(ctx, "", "", 0)
	if err != nil || len(infos) != 1 || infos[0].Key != "d/x" {
		t.Fatalf("List = %+v, %v; want only d/x", infos, err)
	}
}

func TestDeletePrunesDirs(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, k := range []string{"chunks/0/1/5_0_1", "chunks/0/2/6_0_1"} {
		if err := s.Put(ctx, k, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "chunks/0/1/5_0_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "chunks/0/1")); !os.IsNotExist(err) {
		t.Fatalf("empty directory chunks/0/1 left behind: %v", err)
	}
	if err := s.Delete(ctx, "chunks/0/2/6_0_1"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(s.Root())
	if err != nil || len(entries) != 0 {
		t.Fatalf("root after deleting everything: %v, %v; want empty and present", entries, err)
	}
}

// TestPutDeleteRace puts and deletes keys sharing directories at once, so
// Delete's directory pruning races with Put's directory creation.
func TestPutDeleteRace(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			key := "chunks/0/0/" + string(rune('a'+w))
			for i := 0; i < 200; i++ {
				if err := s.Put(ctx, key, bytes.NewReader([]byte("x")), 1); err != nil {
					errs <- err
					return
				}
				if err := s.Delete(ctx, key); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func assertNoTemp(t *testing.T, s *Store) {
	t.Helper()
	filepath.WalkDir(s.Root(), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tmpPrefix) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestFailedPutLeavesNoTemp(t *testing.T) {
	s := newStore(t)
	err := s.Put(context.Background(), "x/y", bytes.NewReader([]byte("short")), 100)
	if err == nil {
		t.Fatal("short Put succeeded")
	}
	if err := s.Put(context.Background(), "x/z", bytes.NewReader([]byte("toolong")), 3); err == nil {
		t.Fatal("Put with extra bytes succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, "x/c", bytes.NewReader([]byte("abc")), 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with cancelled ctx = %v, want context.Canceled", err)
	}
	assertNoTemp(t, s)
}

func TestInvalidKeyPermanent(t *testing.T) {
	err := newStore(t).Put(context.Background(), "../x", bytes.NewReader(nil), 0)
	if !errors.Is(err, ErrInvalidKey) || !object.IsPermanent(err) {
		t.Fatalf("Put(../x) = %v, want a permanent ErrInvalidKey", err)
	}
}

func TestRemoveStaleTemp(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "d/x", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(s.Root(), "d", tmpPrefix+"old")
	fresh := filepath.Join(s.Root(), "d", tmpPrefix+"fresh")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	n, err := s.RemoveStaleTemp(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("RemoveStaleTemp = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatal("stale temp file survived")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatal("fresh temp file removed")
	}
	if _, err := s.Head(ctx, "d/x"); err != nil {
		t.Fatalf("object removed: %v", err)
	}
}

// TestDirectWriteSizes puts objects around the O_DIRECT alignment and
// buffer boundaries (aligned body, unaligned tail, several buffers) and
// reads each back byte for byte, on the test's disk and, where one is
// mounted, on tmpfs (/dev/shm), which may refuse O_DIRECT.
func TestDirectWriteSizes(t *testing.T) {
	roots := []string{t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "shoal-filestore-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			roots = append(roots, d)
		}
	}
	sizes := []int{0, 1, directAlign - 1, directAlign, directAlign + 1, copyBufSize - 1,
		copyBufSize, copyBufSize + 1, copyBufSize + directAlign + 7, 4 << 20, 4<<20 - 5}
	ctx := context.Background()
	for _, root := range roots {
		s, err := New(filepath.Join(root, "objects"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range sizes {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i*31 + i>>12 + n)
			}
			key := "d/" + strings.Repeat("x", 1+n%7)
			if err := s.Put(ctx, key, bytes.NewReader(data), int64(n)); err != nil {
				t.Fatalf("%s: put %d bytes: %v", root, n, err)
			}
			rc, err := s.Get(ctx, key, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if _, err := got.ReadFrom(rc); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			if !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("%s: %d bytes put, read back %d differing", root, n, got.Len())
			}
			if err := s.Put(ctx, "short", bytes.NewReader(data), int64(n)+1); err == nil {
				t.Fatalf("%s: put of %d bytes claiming %d succeeded", root, n, n+1)
			}
		}
	}
}

// TestTempPrefixKnownToTests: the mounted tests count objects by walking
// the bucket and must leave temporary files out by the same prefix.
func TestTempPrefixKnownToTests(t *testing.T) {
	if tmpPrefix != testutil.FileStoreTempPrefix {
		t.Fatalf("tmpPrefix %q, testutil.FileStoreTempPrefix %q", tmpPrefix, testutil.FileStoreTempPrefix)
	}
}
