package data

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestCloseLeavesNoGoroutines: after writers and the Store are closed, no
// upload, commit, fetch or prefetch goroutine is left.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New(newMem(), Config{BlockSize: 4096, ReadAhead: 4, Logger: discardLogger()})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	data := pattern(1, 0, 200_000)
	writeAll(t, w, 0, data)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "read", e.readFile(t, s.NewReader(1), 1, 0, len(data)), data)
	w2 := s.NewWriter(2, e.newID, e.committer(2))
	writeAll(t, w2, 0, data) // left unflushed: Close abandons it
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Write(context.Background(), 0, data[:10]); err != nil {
		// Writes after Store.Close still buffer; their uploads fail.
		t.Logf("write after close: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStats(t *testing.T) {
	const bs = 1 << 20
	s := newTestStore(t, newMem(), Config{BlockSize: bs})
	e := newEngine(nil)
	writeFile(t, s, e, 1, pattern(1, 0, 3*bs+10))
	st := s.Stats()
	if st.BlocksPut != 4 || st.BytesPut != 3*bs+10 || st.BufferUsed != 0 {
		t.Fatalf("after write: %+v", st)
	}
	r := s.NewReader(1)
	e.readFile(t, r, 1, 2*bs+100, 4096) // random: ranged
	e.readFile(t, r, 1, 0, 4096)        // far away: random again
	st = s.Stats()
	if st.RangesFetched != 2 || st.BytesFetched != 8192 || st.CacheMisses != 2 {
		t.Fatalf("after reads: %+v", st)
	}
}
