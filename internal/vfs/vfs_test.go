package vfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object/memstore"
	"shoal/internal/vfs"
)

// newFS returns an FS over in-memory engine and store, for tests of the
// vfs logic itself (the engines and stores have their own suites).
func newFS(t *testing.T) *vfs.FS {
	t.Helper()
	fs, _ := newFSOver(t, nil)
	return fs
}

// mknodMany makes n empty files f00000, f00001, ... in the root.
func mknodMany(t *testing.T, fs *vfs.FS, n int) {
	t.Helper()
	for i := range n {
		if _, err := fs.Mknod(context.Background(), meta.RootIno, fmt.Sprintf("f%05d", i), syscall.S_IFREG|0o644, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// newFSOver is newFS with the engine wrapped by wrap (nil: none), for
// tests that count or hold an engine's calls; it also returns the data
// store, for its statistics.
func newFSOver(t *testing.T, wrap func(meta.Engine) meta.Engine) (*vfs.FS, *data.Store) {
	t.Helper()
	ctx := context.Background()
	inner := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := inner.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	var eng meta.Engine = inner
	if wrap != nil {
		eng = wrap(inner)
	}
	store := data.New(memstore.New(), data.Config{BlockSize: 64 << 10})
	fs := vfs.New(eng, store, vfs.Config{})
	t.Cleanup(func() {
		if err := fs.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		store.Close()
		inner.Close()
	})
	return fs, store
}

func create(t *testing.T, fs *vfs.FS, name string) (meta.Ino, vfs.Fh) {
	t.Helper()
	e, res, err := fs.Create(context.Background(), meta.RootIno, name, 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return e.Ino, res.Fh
}

func readAll(t *testing.T, fs *vfs.FS, fh vfs.Fh, size int) []byte {
	t.Helper()
	buf := make([]byte, size)
	n, err := fs.Read(context.Background(), fh, 0, buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return buf[:n]
}

func TestWriteReadAcrossBlocksAndChunks(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	ino, fh := create(t, fs, "f")
	want := make([]byte, 300<<10)
	rand.New(rand.NewSource(1)).Read(want)
	off := uint64(meta.ChunkSize - 100<<10) // spans the first chunk boundary
	if _, err := fs.Write(ctx, fh, off, want); err != nil {
		t.Fatal(err)
	}
	attr, err := fs.Getattr(ctx, ino)
	if err != nil || attr.Length != off+uint64(len(want)) {
		t.Fatalf("pending length: %d %v", attr.Length, err)
	}
	got := make([]byte, len(want))
	if n, err := fs.Read(ctx, fh, off, got); err != nil || n != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("read back: n=%d err=%v equal=%v", n, err, bytes.Equal(got, want))
	}
	hole := make([]byte, 4096)
	if _, err := fs.Read(ctx, fh, 0, hole); err != nil || !bytes.Equal(hole, make([]byte, 4096)) {
		t.Fatalf("hole not zero: %v", err)
	}
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
}

func TestTruncateThenExtendReadsZeros(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	ino, fh := create(t, fs, "f")
	fs.Write(ctx, fh, 0, bytes.Repeat([]byte{7}, 10000))
	if _, err := fs.Setattr(ctx, ino, vfs.SetattrRequest{SetSize: true, Size: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Setattr(ctx, ino, vfs.SetattrRequest{SetSize: true, Size: 10000}); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, fs, fh, 20000)
	want := append(bytes.Repeat([]byte{7}, 100), make([]byte, 9900)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, mismatch", len(got))
	}
	fs.Release(ctx, fh)
}

func TestUnlinkedFileStaysUsableUntilLastClose(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	ino, fh := create(t, fs, "f")
	fs.Write(ctx, fh, 0, []byte("still here"))
	if err := fs.Unlink(ctx, meta.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Lookup(ctx, meta.RootIno, "f"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup after unlink: %v", err)
	}
	fs.Write(ctx, fh, 10, []byte("!"))
	if got := readAll(t, fs, fh, 100); string(got) != "still here!" {
		t.Fatalf("got %q", got)
	}
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Getattr(ctx, ino); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("inode survives last close: %v", err)
	}
}

func TestReaddirPagesLargeDirectory(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	const n = 2500
	mknodMany(t, fs, n)
	fh, err := fs.Opendir(ctx, meta.RootIno)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Releasedir(fh)
	seen := map[string]bool{}
	off := uint64(0)
	for {
		batch := 0
		err := fs.Readdir(ctx, fh, off, 40, time.Second, func(e meta.DirEntry, next uint64, _ time.Time) bool {
			if batch == 97 { // the kernel's buffer is full
				return false
			}
			if seen[e.Name] {
				t.Fatalf("duplicate %s", e.Name)
			}
			if e.Attr == nil && e.Name != "." && e.Name != ".." {
				t.Fatalf("plus entry %s without attributes", e.Name)
			}
			seen[e.Name] = true
			off, batch = next, batch+1
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if batch == 0 {
			break
		}
	}
	if len(seen) != n+2 {
		t.Fatalf("listed %d entries, want %d", len(seen), n+2)
	}
}

func TestCopyFileRangeSharesData(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	_, src := create(t, fs, "src")
	_, dst := create(t, fs, "dst")
	want := bytes.Repeat([]byte("0123456789"), 20000)
	fs.Write(ctx, src, 0, want)
	n, err := fs.CopyFileRange(ctx, src, 0, dst, 5, uint64(len(want)))
	if err != nil || n != uint64(len(want)) {
		t.Fatalf("copy: %d %v", n, err)
	}
	fs.Write(ctx, dst, 5, []byte("XX"))
	if got := readAll(t, fs, dst, 1<<20); !bytes.Equal(got[5:7], []byte("XX")) || !bytes.Equal(got[7:], want[2:]) {
		t.Fatal("destination content wrong")
	}
	if got := readAll(t, fs, src, 1<<20); !bytes.Equal(got, want) {
		t.Fatal("source changed by a write to the copy")
	}
	fs.Release(ctx, src)
	fs.Release(ctx, dst)
}

func TestConcurrentWritersOnDistinctFiles(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			e, res, err := fs.Create(ctx, meta.RootIno, fmt.Sprintf("w%d", w), 0o644, syscall.O_RDWR)
			if err != nil {
				t.Error(err)
				return
			}
			want := bytes.Repeat([]byte{byte(w)}, 200<<10)
			for off := 0; off < len(want); off += 10 << 10 {
				fs.Write(ctx, res.Fh, uint64(off), want[off:off+10<<10])
				buf := make([]byte, 10<<10)
				if _, err := fs.Read(ctx, res.Fh, uint64(off), buf); err != nil || !bytes.Equal(buf, want[off:off+10<<10]) {
					t.Errorf("writer %d: read while writing at %d: %v", w, off, err)
				}
			}
			if err := fs.Release(ctx, res.Fh); err != nil {
				t.Error(err)
			}
			if a, _ := fs.Getattr(ctx, e.Ino); a.Length != uint64(len(want)) {
				t.Errorf("writer %d: length %d", w, a.Length)
			}
		}(w)
	}
	wg.Wait()
}

func TestLseekDataAndHoles(t *testing.T) {
	fs := newFS(t)
	ctx := context.Background()
	ino, fh := create(t, fs, "sparse")
	const mib = 1 << 20
	fs.Write(ctx, fh, 2*mib, bytes.Repeat([]byte{1}, mib))     // data [2M, 3M)
	fs.Write(ctx, fh, meta.ChunkSize+mib, []byte("tail data")) // data in chunk 1
	if _, err := fs.Setattr(ctx, ino, vfs.SetattrRequest{SetSize: true, Size: meta.ChunkSize + 4*mib}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		off    uint64
		whence int
		want   uint64
		err    error
	}{
		{0, vfs.SeekData, 2 * mib, nil},
		{0, vfs.SeekHole, 0, nil},
		{2*mib + 5, vfs.SeekData, 2*mib + 5, nil},
		{2 * mib, vfs.SeekHole, 3 * mib, nil},
		{3 * mib, vfs.SeekData, meta.ChunkSize + mib, nil},
		{meta.ChunkSize + mib + 9, vfs.SeekData, 0, syscall.ENXIO},
		{meta.ChunkSize + mib, vfs.SeekHole, meta.ChunkSize + mib + 9, nil},
		{meta.ChunkSize + 4*mib, vfs.SeekHole, 0, syscall.ENXIO},
	}
	for _, tt := range tests {
		got, err := fs.Lseek(ctx, fh, tt.off, tt.whence)
		if !errors.Is(err, tt.err) || (err == nil && got != tt.want) {
			t.Errorf("lseek(%d, %d) = %d, %v; want %d, %v", tt.off, tt.whence, got, err, tt.want, tt.err)
		}
	}
	fs.Release(ctx, fh)
}

// hangingStore never completes a Put until its context ends: an object
// store that went away.
type hangingStore struct{ *memstore.Store }

func (h hangingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestFlushIsBoundedWhenTheStoreHangs(t *testing.T) {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	store := data.New(hangingStore{memstore.New()}, data.Config{BlockSize: 64 << 10})
	fs := vfs.New(eng, store, vfs.Config{FlushTimeout: 300 * time.Millisecond})
	_, fh := create(t, fs, "f")
	if _, err := fs.Write(ctx, fh, 0, []byte("data")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := fs.Fsync(ctx, fh)
	if err == nil {
		t.Fatal("fsync succeeded with a store that stores nothing")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("fsync took %v, want about the flush timeout", d)
	}
}
