package object_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"shoal/internal/object"
	"shoal/internal/object/memstore"
	"shoal/internal/object/objecttest"
)

func TestRetryConformance(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store {
		return object.WithRetry(memstore.New(), 3, time.Millisecond)
	})
}

// TestRetryConformanceUnderFaults runs the suite with one failure in four
// of every kind injected below the retry wrapper.
func TestRetryConformanceUnderFaults(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store {
		f := object.WithFaults(memstore.New())
		f.FailPuts(1)
		f.FailGets(1)
		f.FailHeads(1)
		f.FailLists(1)
		f.FailDeletes(1)
		return object.WithRetry(f, 3, time.Millisecond)
	})
}

func newRetry(attempts int) (*object.FaultStore, object.Store) {
	f := object.WithFaults(memstore.New())
	return f, object.WithRetry(f, attempts, time.Millisecond)
}

func TestRetryTransient(t *testing.T) {
	ctx := context.Background()
	f, r := newRetry(3)
	f.FailPuts(2)
	if err := putString(ctx, r, "k", "value"); err != nil {
		t.Fatalf("Put with 2 faults and 3 attempts: %v", err)
	}
	f.FailPuts(3)
	if err := putString(ctx, r, "k2", "value"); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("Put with 3 faults and 3 attempts = %v, want ErrInjected", err)
	}
	if st := f.Stats(); st.Puts != 6 {
		t.Fatalf("Puts reaching the store = %d, want 6", st.Puts)
	}
	f.FailGets(2)
	rc, err := r.Get(ctx, "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "value" {
		t.Fatalf("Get = %q", data)
	}
}

func TestRetryNotExistNotRetried(t *testing.T) {
	f, r := newRetry(5)
	if _, err := r.Get(context.Background(), "missing", 0, -1); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("Get = %v", err)
	}
	if _, err := r.Head(context.Background(), "missing"); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("Head = %v", err)
	}
	if st := f.Stats(); st.Gets != 1 || st.Heads != 1 {
		t.Fatalf("stats = %+v, want one Get and one Head", st)
	}
}

// permStore fails every Head with a permanent error.
type permStore struct {
	object.Store
	heads int
}

func (p *permStore) Head(ctx context.Context, key string) (object.Info, error) {
	p.heads++
	return object.Info{}, object.Permanent(errors.New("access denied"))
}

func TestRetryPermanentNotRetried(t *testing.T) {
	p := &permStore{Store: memstore.New()}
	r := object.WithRetry(p, 5, time.Millisecond)
	_, err := r.Head(context.Background(), "k")
	if !object.IsPermanent(err) || p.heads != 1 {
		t.Fatalf("Head = %v after %d tries, want a permanent error after 1", err, p.heads)
	}
	if object.Permanent(nil) != nil {
		t.Fatal("Permanent(nil) != nil")
	}
}

func TestRetryRespectsContext(t *testing.T) {
	f := object.WithFaults(memstore.New())
	r := object.WithRetry(f, 10, time.Second)
	f.FailHeads(10)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Head(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, object.ErrInjected) {
		t.Fatalf("Head = %v, want the fault and the deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Head took %v; the backoff ignored the context", d)
	}
}

// onceReader is a reader that is not an io.Seeker.
type onceReader struct{ r io.Reader }

func (o *onceReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestRetryPutReplaysBody(t *testing.T) {
	ctx := context.Background()
	f, r := newRetry(3)
	for _, body := range []io.Reader{
		bytes.NewReader([]byte("seekable")),
		&onceReader{strings.NewReader("seekable")},
	} {
		f.DiePuts(1, 3)
		if err := r.Put(ctx, "k", body, 8); err != nil {
			t.Fatalf("Put(%T) after a mid-put death: %v", body, err)
		}
		rc, _ := r.Get(ctx, "k", 0, -1)
		data, _ := io.ReadAll(rc)
		rc.Close()
		if string(data) != "seekable" {
			t.Fatalf("Put(%T) stored %q", body, data)
		}
	}
}

func TestRetryPutBodyErrorNotRetried(t *testing.T) {
	f, r := newRetry(5)
	body := &onceReader{io.MultiReader(strings.NewReader("ab"), errReader{})}
	if err := r.Put(context.Background(), "k", body, 10); err == nil {
		t.Fatal("Put with failing body succeeded")
	}
	if st := f.Stats(); st.Puts != 0 {
		t.Fatalf("store saw %d Puts for a body that could not be read", st.Puts)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("source broke") }

func TestRetryGetResumesBody(t *testing.T) {
	ctx := context.Background()
	f, r := newRetry(4)
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := r.Put(ctx, "k", bytes.NewReader(data), 1000); err != nil {
		t.Fatal(err)
	}
	f.BreakReads(3, 100)
	rc, err := r.Get(ctx, "k", 10, 500)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[10:510]) {
		t.Fatalf("resumed Get: %d bytes, err %v; want data[10:510]", len(got), err)
	}
	f.BreakReads(4, 100)
	rc, _ = r.Get(ctx, "k", 0, -1)
	got, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, object.ErrInjected) || !bytes.Equal(got, data[:len(got)]) {
		t.Fatalf("Get beyond the budget: %d bytes, err %v", len(got), err)
	}
}

// TestRetryHookSeesEachRetry: the hook hears of every retry, by
// operation, with its backoff; a first attempt that succeeds is no retry.
func TestRetryHookSeesEachRetry(t *testing.T) {
	ctx := context.Background()
	f := object.WithFaults(memstore.New())
	retries := map[string]int{}
	var waited time.Duration
	r := object.WithRetryHook(f, 5, time.Millisecond, func(op string, d time.Duration) {
		retries[op]++
		waited += d
	})
	f.FailPuts(2)
	if err := putString(ctx, r, "k", "value"); err != nil {
		t.Fatal(err)
	}
	f.FailGets(1)
	rc, err := r.Get(ctx, "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	f.FailHeads(4)
	if _, err := r.Head(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Head(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"put": 2, "get": 1, "head": 4}
	if len(retries) != len(want) || retries["put"] != 2 || retries["get"] != 1 || retries["head"] != 4 {
		t.Errorf("retries %v, want %v", retries, want)
	}
	// Backoff from 1 ms doubling per operation, each in the upper half of
	// its interval: put 1+2, get 1, head 1+2+4+8 ms at most.
	if lo, hi := 19*time.Millisecond/2, 19*time.Millisecond; waited < lo || waited > hi {
		t.Errorf("backoff %v in all, want %v to %v", waited, lo, hi)
	}
}
