package data

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

func TestBlockKey(t *testing.T) {
	cases := []struct {
		id    meta.SliceID
		index int
		size  int
		want  string
	}{
		{1, 0, 4 << 20, "chunks/0/0/1_0_4194304"},
		{1234, 3, 100, "chunks/0/1/1234_3_100"},
		{1234567, 15, 1, "chunks/1/1234/1234567_15_1"},
		{9876543210, 0, 4096, "chunks/9876/9876543/9876543210_0_4096"},
	}
	for _, c := range cases {
		if got := BlockKey(c.id, c.index, c.size); got != c.want {
			t.Errorf("BlockKey(%d, %d, %d) = %q, want %q", c.id, c.index, c.size, got, c.want)
		}
	}
}

// writeAll writes p at off and flushes, failing the test on error.
func writeAll(t testing.TB, w *Writer, off uint64, p []byte) {
	t.Helper()
	if err := w.Write(context.Background(), off, p); err != nil {
		t.Fatalf("write %d+%d: %v", off, len(p), err)
	}
}

func flush(t testing.TB, w *Writer) {
	t.Helper()
	if err := w.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func TestWriterSequential(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	data := pattern(1, 0, 100_000)
	for off := 0; off < len(data); off += 1000 {
		writeAll(t, w, uint64(off), data[off:min(off+1000, len(data))])
	}
	flush(t, w)
	got := e.slices(1, 0)
	if len(got) != 1 || got[0].Size != 100_000 || got[0].Pos != 0 || got[0].Len != 100_000 {
		t.Fatalf("slices = %v, want one slice of 100000 bytes", got)
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(data)), data)
	if s.Used() != 0 {
		t.Fatalf("buffer used after flush = %d", s.Used())
	}
}

func TestWriterInPlaceOverwrite(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 64 << 10})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	var m model
	for _, wr := range []struct {
		off uint64
		n   int
	}{{0, 1000}, {500, 300}, {900, 400}, {1300, 10}} {
		p := pattern(byte(wr.off), wr.off, wr.n)
		m.write(wr.off, p)
		writeAll(t, w, wr.off, p)
	}
	flush(t, w)
	if got := e.slices(1, 0); len(got) != 1 {
		t.Fatalf("slices = %v, want one (overwrites of the open tail extend it)", got)
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

func TestWriterOverlapAndSealed(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	var m model
	do := func(off uint64, n int, seed byte) {
		p := pattern(seed, off, n)
		m.write(off, p)
		writeAll(t, w, off, p)
	}
	do(0, 10000, 1)    // blocks 0 and 1 sealed
	do(5000, 1000, 2)  // touches sealed block 1: new slice
	do(9000, 2000, 3)  // overlaps the newer slice? no: extends slice 1's tail
	do(5500, 100, 4)   // inside slice 2's open tail
	do(20000, 100, 5)  // gap: new slice
	do(20100, 8000, 6) // extends slice 3 across blocks
	flush(t, w)
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

func TestWriterCrossChunk(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096})
	e := newEngine(nil)
	w := s.NewWriter(7, e.newID, e.committer(7))
	off := uint64(meta.ChunkSize - 5000)
	data := pattern(3, off, 10000)
	writeAll(t, w, off, data)
	if got := w.Extent(); got != off+10000 {
		t.Fatalf("Extent = %d, want %d", got, off+10000)
	}
	flush(t, w)
	c0, c1 := e.slices(7, 0), e.slices(7, 1)
	if len(c0) != 1 || c0[0].Pos != meta.ChunkSize-5000 || c0[0].Size != 5000 {
		t.Fatalf("chunk 0 slices = %v", c0)
	}
	if len(c1) != 1 || c1[0].Pos != 0 || c1[0].Size != 5000 {
		t.Fatalf("chunk 1 slices = %v", c1)
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(7), 7, off, len(data)), data)
}

func TestWriterExtentDirty(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	if w.Dirty() || w.Extent() != 0 {
		t.Fatalf("new writer: Dirty %v Extent %d", w.Dirty(), w.Extent())
	}
	writeAll(t, w, 3*meta.ChunkSize+100, []byte("hello"))
	writeAll(t, w, 10, []byte("x"))
	if !w.Dirty() || w.Extent() != 3*meta.ChunkSize+105 {
		t.Fatalf("after writes: Dirty %v Extent %d", w.Dirty(), w.Extent())
	}
	flush(t, w)
	if w.Dirty() || w.Extent() != 0 {
		t.Fatalf("after flush: Dirty %v Extent %d", w.Dirty(), w.Extent())
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), 0, []byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
	if err := w.Flush(context.Background()); err == nil {
		t.Fatal("flush after close succeeded")
	}
}

// TestWriterPutBeforeCommit pins the durability order: every block of a
// slice is stored before the slice is committed, and every commit happens
// before Flush returns.
func TestWriterPutBeforeCommit(t *testing.T) {
	log := &trace{}
	rec := &recordStore{Store: newMem(), log: log}
	s := newTestStore(t, rec, Config{BlockSize: 4096, Uploads: 4})
	e := newEngine(log)
	w := s.NewWriter(1, e.newID, e.committer(1))
	rng := rand.New(rand.NewPCG(1, 2))
	var m model
	for i := 0; i < 300; i++ {
		off := uint64(rng.IntN(200_000))
		p := pattern(byte(i), off, 1+rng.IntN(12_000))
		m.write(off, p)
		writeAll(t, w, off, p)
	}
	flush(t, w)
	log.add("flushed")
	events := log.snapshot()
	put := map[string]int{}
	commits := 0
	for i, ev := range events {
		var id meta.SliceID
		var size uint32
		switch {
		case strings.HasPrefix(ev, "put "):
			put[strings.TrimPrefix(ev, "put ")] = i
		case strings.HasPrefix(ev, "commit "):
			commits++
			if _, err := fmt.Sscanf(ev, "commit %d %d", &id, &size); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < BlockCount(4096, size); b++ {
				key := BlockKey(id, b, BlockLen(4096, size, b))
				if at, ok := put[key]; !ok || at > i {
					t.Fatalf("commit of slice %d at event %d before put of %s", id, i, key)
				}
			}
		case ev == "flushed":
			if i != len(events)-1 {
				t.Fatalf("events after flush returned: %v", events[i:])
			}
		}
	}
	if commits == 0 {
		t.Fatal("no commits recorded")
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

func TestWriterBufferLimit(t *testing.T) {
	fs := &failStore{Store: newMem()}
	fs.delay.Store(int64(2 * time.Millisecond))
	const limit = 256 << 10
	s := newTestStore(t, fs, Config{BlockSize: 16 << 10, BufferSize: limit, Uploads: 2})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	stop, done := make(chan struct{}), make(chan struct{})
	var peak int64
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
				peak = max(peak, s.Used())
			}
		}
	}()
	data := pattern(9, 0, 2<<20)
	for off := 0; off < len(data); off += 8 << 10 {
		writeAll(t, w, uint64(off), data[off:off+8<<10])
	}
	flush(t, w)
	close(stop)
	<-done
	// Soft limit: one write may overshoot by its pages.
	if peak > limit+(16<<10)+2*pageSize {
		t.Fatalf("buffer peak %d exceeds limit %d", peak, limit)
	}
	if got := e.slices(1, 0); len(got) != 1 {
		t.Fatalf("back-pressure cut a sequential write into %d slices", len(got))
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(data)), data)
}

// TestWriterBufferRandomSmall fills the buffer with small open slices,
// which only freezing can drain.
func TestWriterBufferRandomSmall(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 1 << 20, BufferSize: 1 << 20})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	var m model
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		off := uint64(rng.IntN(8<<20)) &^ 4095
		p := pattern(byte(i), off, 4096)
		m.write(off, p)
		writeAll(t, w, off, p)
	}
	flush(t, w)
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

func TestWriterUploadFailureRetry(t *testing.T) {
	fs := &failStore{Store: newMem()}
	s := newTestStore(t, fs, Config{BlockSize: 4096})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	data := pattern(5, 0, 10_000)
	fs.failing.Store(true)
	writeAll(t, w, 0, data)
	err := w.Flush(context.Background())
	if err == nil || !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "chunks/") {
		t.Fatalf("flush with failing store: %v, want injected error naming the key", err)
	}
	if !w.Dirty() || len(e.slices(1, 0)) != 0 {
		t.Fatalf("after failed flush: Dirty %v, committed %v", w.Dirty(), e.slices(1, 0))
	}
	fs.failing.Store(false)
	flush(t, w)
	if w.Dirty() {
		t.Fatal("dirty after successful retry")
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(data)), data)
}

func TestWriterCommitFailureRetry(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096})
	e := newEngine(nil)
	var fail sync.Mutex
	failing := true
	commit := e.committer(1)
	w := s.NewWriter(1, e.newID, func(ctx context.Context, ws []meta.SliceWrite) error {
		fail.Lock()
		defer fail.Unlock()
		if failing {
			return errInjected
		}
		return commit(ctx, ws)
	})
	writeAll(t, w, 0, []byte("data"))
	if err := w.Flush(context.Background()); !errors.Is(err, errInjected) {
		t.Fatalf("flush: %v, want injected", err)
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	flush(t, w)
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, 4), []byte("data"))
}

func TestWriterIdleCommit(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096, IdleCommit: 20 * time.Millisecond})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	writeAll(t, w, 0, []byte("idle"))
	deadline := time.Now().Add(5 * time.Second)
	for w.Dirty() {
		if time.Now().After(deadline) {
			t.Fatal("idle slice never committed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := e.slices(1, 0); len(got) != 1 {
		t.Fatalf("slices = %v", got)
	}
}

// TestWriterConcurrentFlush runs Write and Flush on one Writer from
// different goroutines.
func TestWriterConcurrentFlush(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 4096})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	data := pattern(2, 0, 300_000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := w.Flush(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for off := 0; off < len(data); off += 3000 {
		writeAll(t, w, uint64(off), data[off:min(off+3000, len(data))])
	}
	close(stop)
	wg.Wait()
	flush(t, w)
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(data)), data)
}

// TestWriterCommitOrder: slices commit in the order they were written, and
// each object (a slice's own, or a pack of small ones) asks for its id
// exactly once.
func TestWriterCommitOrder(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 64 << 10})
	e := newEngine(nil)
	var idCalls int
	var mu sync.Mutex
	newID := func(ctx context.Context) (meta.SliceID, error) {
		mu.Lock()
		idCalls++
		mu.Unlock()
		return e.newID(ctx)
	}
	w := s.NewWriter(1, newID, e.committer(1))
	writeAll(t, w, 0, pattern(1, 0, 100))     // A
	writeAll(t, w, 200, pattern(2, 200, 100)) // B
	writeAll(t, w, 50, pattern(3, 50, 200))   // C overlaps newer B: a new slice
	writeAll(t, w, 300, pattern(4, 300, 10))  // extends B (C does not overlap)
	flush(t, w)
	got := e.slices(1, 0)
	var pos []uint32
	for _, sl := range got {
		pos = append(pos, sl.Pos)
	}
	if fmt.Sprint(pos) != "[0 200 50]" {
		t.Fatalf("commit order by position = %v, want [0 200 50]", pos)
	}
	ids := map[meta.SliceID]bool{}
	for _, sl := range got {
		ids[sl.ID] = true
	}
	if idCalls != len(ids) || ids[0] {
		t.Fatalf("IDFunc called %d times for %d objects %v", idCalls, len(ids), got)
	}
	var m model
	m.write(0, pattern(1, 0, 100))
	m.write(200, pattern(2, 200, 100))
	m.write(50, pattern(3, 50, 200))
	m.write(300, pattern(4, 300, 10))
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

// TestWriterVerifiesOldBlocks: a slice whose blocks were stored long ago
// (here: any time ago) is checked before its commit, and a block that gc
// took meanwhile fails the commit instead of committing a hole.
func TestWriterVerifiesOldBlocks(t *testing.T) {
	mem := newMem()
	s := newTestStore(t, mem, Config{BlockSize: 4096, IdleCommit: time.Hour})
	s.verifyAfter = 0
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	writeAll(t, w, 0, pattern(1, 0, 3*4096+10)) // blocks 0-2 upload now
	for s.Stats().BlocksPut < 3 {
		time.Sleep(time.Millisecond)
	}
	key := BlockKey(1, 1, 4096)
	if err := mem.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	err := w.Flush(context.Background())
	if !errors.Is(err, object.ErrNotExist) || !strings.Contains(err.Error(), key) {
		t.Fatalf("flush over a vanished block: %v", err)
	}
	if got := e.slices(1, 0); len(got) != 0 {
		t.Fatalf("committed %v over a missing block", got)
	}
	w2 := s.NewWriter(2, e.newID, e.committer(2))
	writeAll(t, w2, 0, pattern(2, 0, 10_000))
	flush(t, w2) // verified and present: commits
}

// TestWriterErrnoCommitNotRetriedInBackground: an engine answer (an
// errno) is reported by Flush and retried only by Flush, not every idle
// tick; an outage error is retried in the background.
func TestWriterErrnoCommitNotRetriedInBackground(t *testing.T) {
	for _, c := range []struct {
		err        error
		background bool
	}{{syscall.EDQUOT, false}, {errInjected, true}} {
		s := newTestStore(t, newMem(), Config{BlockSize: 4096, IdleCommit: 5 * time.Millisecond})
		var calls atomic.Int64
		w := s.NewWriter(1, newEngine(nil).newID, func(context.Context, []meta.SliceWrite) error {
			calls.Add(1)
			return c.err
		})
		writeAll(t, w, 0, []byte("x"))
		if err := w.Flush(context.Background()); !errors.Is(err, c.err) {
			t.Fatalf("flush: %v, want %v", err, c.err)
		}
		before := calls.Load()
		time.Sleep(60 * time.Millisecond)
		if retried := calls.Load() > before; retried != c.background {
			t.Fatalf("%v: retried in the background = %v", c.err, retried)
		}
		_ = w.Close(context.Background())
	}
}
