package crash

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/volume"
)

// TestLoadStreams loads a dump of many files into SQLite and checks that
// the Go heap never grows by more than a fraction of the dump's size: the
// load streams (a batch of keys at a time) instead of building the tree in
// memory. A million-file run is too slow for CI; the bound is per key, so
// a smaller volume shows it. (The dump side holds one key kind at a time:
// see docs/admin.md.)
func TestLoadStreams(t *testing.T) {
	const files = 60000
	ctx := context.Background()
	dumpPath, dirIno := writeManyDump(t, files)
	fi, err := os.Stat(dumpPath)
	mustDo(t, err)

	eng, err := volume.OpenEngine(ctx, "sqlite://"+filepath.Join(t.TempDir(), "loaded.db"))
	mustDo(t, err)
	defer eng.Close()
	in, err := os.Open(dumpPath)
	mustDo(t, err)
	defer in.Close()
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // keep garbage out of the measurement
	grew := peakHeapGrowth(func() { mustDo(t, eng.(meta.Dumper).Restore(ctx, in)) })
	t.Logf("%d files: dump %d KiB, heap grew by at most %d KiB during the load", files, fi.Size()>>10, grew>>10)
	if grew > fi.Size()/4 {
		t.Errorf("load of a %d KiB dump grew the heap by %d KiB: it does not stream", fi.Size()>>10, grew>>10)
	}
	// The dump side holds one key kind per read transaction today: logged,
	// not asserted, so that a change to per-key streaming shows here.
	dumped := peakHeapGrowth(func() { mustDo(t, eng.(meta.Dumper).Dump(ctx, io.Discard)) })
	t.Logf("dumping it again grew the heap by at most %d KiB", dumped>>10)
	ents, err := eng.Readdir(ctx, dirIno, "", files+10, false)
	mustDo(t, err)
	if len(ents) != files {
		t.Errorf("loaded directory holds %d entries, want %d", len(ents), files)
	}
}

// writeManyDump dumps a volume of n empty files in one directory, built
// in memory, to a file; the in-memory engine is gone when it returns, so
// it does not weigh on the heap measured afterwards.
func writeManyDump(t *testing.T, n int) (string, meta.Ino) {
	ctx := context.Background()
	src := kvmeta.New(memkv.New(), kvmeta.Options{})
	defer src.Close()
	f := meta.Format{Name: "mem", Version: meta.CurrentFormatVersion, Storage: "file", Bucket: t.TempDir(), BlockSize: 1 << 20}
	mustDo(t, src.Format(ctx, f, false))
	dir, err := src.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir, Mode: 0o755})
	mustDo(t, err)
	for i := range n {
		_, err := src.Mknod(ctx, meta.MknodRequest{Parent: dir.Ino, Name: fmt.Sprintf("file-with-a-longish-name-%06d", i), Type: meta.TypeFile, Mode: 0o644})
		mustDo(t, err)
	}
	path := filepath.Join(t.TempDir(), "many.dump")
	out, err := os.Create(path)
	mustDo(t, err)
	mustDo(t, src.Dump(ctx, out))
	mustDo(t, out.Close())
	return path, dir.Ino
}

// peakHeapGrowth runs fn and returns the largest growth of the live heap
// over its value before, sampled every few milliseconds.
func peakHeapGrowth(fn func()) int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := int64(ms.HeapAlloc)
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.ReadMemStats(&s)
				if g := int64(s.HeapAlloc) - base; g > peak.Load() {
					peak.Store(g)
				}
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}
