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
	defer func(d time.Duration) { storeBackoff = d }(storeBackoff)
	storeBackoff = time.Millisecond
	ctx := context.Background()
	dir := t.TempDir()
	url := "sqlite://" + filepath.Join(dir, "meta.db")
	if _, err := Format(ctx, url, FormatOptions{Bucket: filepath.Join(dir, "bucket")}); err != nil {
		t.Fatal(err)
	}
	var puts, retries atomic.Int64
	hook := failingHook{&puts, &retries}
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
	if got := retries.Load(); got != StoreAttempts-1 {
		t.Fatalf("the hook heard of %d retries, want %d", got, StoreAttempts-1)
	}
}

// failingHook is a StoreHook that fails every put of a block (failingPuts)
// and counts the retries of puts.
type failingHook struct{ puts, retries *atomic.Int64 }

func (h failingHook) Objects(s object.Store) object.Store { return failingPuts{s, h.puts} }

func (h failingHook) ObjectRetry(op string, _ time.Duration) {
	if op == "put" {
		h.retries.Add(1)
	}
}
