package volume

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// failingPuts fails every put of a block and counts the attempts.
type failingPuts struct {
	object.Store
	puts *atomic.Int64
}

var errDown = errors.New("store down")

func (f failingPuts) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, "chunks/") {
		f.puts.Add(1)
		return errDown
	}
	return f.Store.Put(ctx, key, r, size)
}

// TestOneRetryPolicy: a block upload through an opened volume reaches the
// backend exactly StoreAttempts times before the flush fails: the data
// layer and the S3 client add no retries of their own over the volume's
// one policy.
func TestOneRetryPolicy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := "sqlite://" + filepath.Join(dir, "meta.db")
	if _, err := Format(ctx, url, FormatOptions{Bucket: filepath.Join(dir, "bucket")}); err != nil {
		t.Fatal(err)
	}
	var puts atomic.Int64
	hook := func(s object.Store) object.Store { return failingPuts{s, &puts} }
	// No background retry of the failed upload while Flush waits.
	v, err := Open(ctx, url, Options{StoreHook: hook, Data: data.Config{IdleCommit: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close(ctx)
	w := v.Data.NewWriter(1000, func(context.Context) (meta.SliceID, error) { return 7, nil },
		func(context.Context, []meta.SliceWrite) error { return nil })
	if err := w.Write(ctx, 0, []byte("one small block")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); !errors.Is(err, errDown) {
		t.Fatalf("flush over a failing store: %v", err)
	}
	if got := puts.Load(); got != StoreAttempts {
		t.Fatalf("the backend saw %d puts of the block, want %d (one retry policy)", got, StoreAttempts)
	}
}
