package filestore

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"shoal/internal/object"
)

// TestSyncBatch: a Put with a SyncBatch is in place at once, leaves its
// file's and directory's fsyncs to Sync (once per directory), and Sync
// fails when an object it must sync is gone.
func TestSyncBatch(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b object.SyncBatch
	ctx := object.WithSyncBatch(t.Context(), &b)
	data := bytes.Repeat([]byte("x"), 10000)
	for _, k := range []string{"a/1", "a/2", "b/3"} {
		if err := s.Put(ctx, k, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		rc, err := s.Get(ctx, k, 0, -1)
		if err != nil {
			t.Fatalf("get %s before Sync: %v", k, err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, data) {
			t.Fatalf("get %s before Sync: %d bytes", k, len(got))
		}
	}
	if n := b.Pending(); n != 5 { // three files, two directories
		t.Fatalf("the batch holds %d syncs, want 5", n)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil || b.Pending() != 0 {
		t.Fatalf("a synced batch synced again: %v", err)
	}
	if err := s.Put(ctx, "c/4", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "c", "4")); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err == nil {
		t.Fatalf("Sync of a batch whose object is gone succeeded")
	}
}
