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

func TestFaultConformance(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return object.WithFaults(memstore.New()) })
}

func putString(ctx context.Context, s object.Store, key, data string) error {
	return s.Put(ctx, key, strings.NewReader(data), int64(len(data)))
}

func TestFaultFailNext(t *testing.T) {
	ctx := context.Background()
	f := object.WithFaults(memstore.New())
	f.FailPuts(2)
	for i := 0; i < 2; i++ {
		if err := putString(ctx, f, "k", "v"); !errors.Is(err, object.ErrInjected) {
			t.Fatalf("Put %d = %v, want ErrInjected", i, err)
		}
	}
	if _, err := f.Head(ctx, "k"); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("failed Put stored the object: %v", err)
	}
	if err := putString(ctx, f, "k", "v"); err != nil {
		t.Fatalf("third Put: %v", err)
	}
	f.FailGets(1)
	f.FailHeads(1)
	f.FailDeletes(1)
	f.FailLists(1)
	if _, err := f.Get(ctx, "k", 0, -1); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("Get = %v", err)
	}
	if _, err := f.Head(ctx, "k"); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("Head = %v", err)
	}
	if err := f.Delete(ctx, "k"); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("Delete = %v", err)
	}
	if _, err := f.List(ctx, "", "", 0); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("List = %v", err)
	}
	if _, err := f.Head(ctx, "k"); err != nil {
		t.Fatalf("Head after faults used up: %v", err)
	}
	st := f.Stats()
	if st.Puts != 3 || st.Gets != 1 || st.Heads != 3 || st.Deletes != 1 || st.Lists != 1 || st.Injected != 6 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestFaultPutsWhere(t *testing.T) {
	ctx := context.Background()
	f := object.WithFaults(memstore.New())
	f.FailPutsWhere(func(key string) bool { return strings.HasSuffix(key, "_1_4") })
	if err := putString(ctx, f, "chunks/0/0/1_0_4", "abcd"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := putString(ctx, f, "chunks/0/0/1_1_4", "abcd"); !errors.Is(err, object.ErrInjected) {
			t.Fatalf("matching Put = %v, want ErrInjected", err)
		}
	}
	f.FailPutsWhere(nil)
	if err := putString(ctx, f, "chunks/0/0/1_1_4", "abcd"); err != nil {
		t.Fatal(err)
	}
	f.FailGetsWhere(func(key string) bool { return key == "chunks/0/0/1_1_4" })
	if _, err := f.Get(ctx, "chunks/0/0/1_1_4", 0, -1); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("matching Get = %v, want ErrInjected", err)
	}
	if _, err := f.Get(ctx, "chunks/0/0/1_0_4", 0, -1); err != nil {
		t.Fatalf("other Get = %v", err)
	}
	f.Reset()
	if _, err := f.Get(ctx, "chunks/0/0/1_1_4", 0, -1); err != nil {
		t.Fatalf("Get after Reset = %v", err)
	}
}

func TestFaultDieMidPut(t *testing.T) {
	ctx := context.Background()
	f := object.WithFaults(memstore.New())
	f.DiePuts(1, 100)
	body := bytes.NewReader(make([]byte, 1000))
	if err := f.Put(ctx, "k", body, 1000); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("dying Put = %v", err)
	}
	if body.Len() != 900 {
		t.Fatalf("dying Put consumed %d bytes, want 100", 1000-body.Len())
	}
	if _, err := f.Head(ctx, "k"); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("dying Put stored something: %v", err)
	}
	f.DiePuts(1, -1)
	body = bytes.NewReader(make([]byte, 1000))
	f.Put(ctx, "k", body, 1000)
	if body.Len() != 500 {
		t.Fatalf("dying Put (half) consumed %d bytes, want 500", 1000-body.Len())
	}
}

func TestFaultBreakReads(t *testing.T) {
	ctx := context.Background()
	f := object.WithFaults(memstore.New())
	if err := putString(ctx, f, "k", "0123456789"); err != nil {
		t.Fatal(err)
	}
	f.BreakReads(1, 4)
	rc, err := f.Get(ctx, "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if string(data) != "0123" || !errors.Is(err, object.ErrInjected) {
		t.Fatalf("broken read = %q, %v", data, err)
	}
}

func TestFaultDownAndLatency(t *testing.T) {
	ctx := context.Background()
	f := object.WithFaults(memstore.New())
	f.SetDown(true)
	if err := putString(ctx, f, "k", "v"); !errors.Is(err, object.ErrInjected) {
		t.Fatalf("Put while down = %v", err)
	}
	f.SetDown(false)
	f.SetLatency(30 * time.Millisecond)
	start := time.Now()
	if err := putString(ctx, f, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("Put with 30ms latency took %v", d)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	if _, err := f.Head(short, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Head with expiring ctx = %v", err)
	}
	f.Reset()
	if u, ok := object.Store(f).(object.Unwrapper); !ok || u.Unwrap() == nil {
		t.Fatal("FaultStore does not unwrap")
	}
}
