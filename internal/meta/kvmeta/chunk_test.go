package kvmeta

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
)

// chunkKeys lists the raw keys of chunk index of ino.
func chunkKeys(t *testing.T, s kv.Store, ino meta.Ino, index uint32) [][]byte {
	t.Helper()
	var keys [][]byte
	err := s.View(context.Background(), func(tx kv.Tx) error {
		return tx.Scan(chunkKey(ino, index), nil, 0, func(k, _ []byte) bool {
			keys = append(keys, slices.Clone(k))
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestAppendedChunkKeys: commits append a key per chunk instead of
// rewriting the list; the list reads back whole and in order; the commit
// that would pass maxChunkKeys folds the list into the base key, and so do
// compaction and truncation.
func TestAppendedChunkKeys(t *testing.T) {
	store := memkv.New()
	e, ctx := formatOn(t, store)
	ino := mkfile(t, e, ctx, "img")
	var want []meta.Slice
	write := func(s meta.Slice) {
		t.Helper()
		if _, err := e.WriteChunk(ctx, ino, 1, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	check := func(when string, keys int) {
		t.Helper()
		got, err := e.ReadChunk(ctx, ino, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: list %v, want %v", when, got, want)
		}
		if n := len(chunkKeys(t, store, ino, 1)); n != keys {
			t.Fatalf("%s: %d keys, want %d", when, n, keys)
		}
	}
	for i := range 3 {
		write(meta.Slice{ID: meta.SliceID(10 + i), Size: 4096, Len: 4096, Pos: uint32(i) * 8192})
	}
	check("three commits", 3)

	// A batch adds one key per chunk it touches.
	ws := []meta.SliceWrite{
		{Index: 1, S: meta.Slice{ID: 20, Size: 100, Len: 100, Pos: 50}},
		{Index: 1, S: meta.Slice{ID: 21, Size: 100, Len: 100, Pos: 500}},
	}
	if _, err := e.WriteSlices(ctx, ino, ws); err != nil {
		t.Fatal(err)
	}
	want = append(want, ws[0].S, ws[1].S)
	check("a batch", 4)
	// Sent again (outcome unknown): nothing is added.
	if _, err := e.WriteSlices(ctx, ino, ws); err != nil {
		t.Fatal(err)
	}
	check("the batch again", 4)

	keys := 4
	for i := 4; keys+1 <= minChunkKeys(len(want)+1)+maxChunkKeys; i++ {
		write(meta.Slice{ID: meta.SliceID(100 + i), Size: 10, Len: 10, Pos: uint32(i) * 100})
		keys++
	}
	check("commits up to the bound", keys)
	write(meta.Slice{ID: 999, Size: 10, Len: 10, Pos: 7})
	check("one more commit folds", minChunkKeys(len(want)))
	write(meta.Slice{ID: 1000, Size: 10, Len: 10, Pos: 9})
	check("appending again", minChunkKeys(len(want)-1)+1)

	// Compaction of a prefix folds the rest in after the replacement.
	old := slices.Clone(want[:3])
	repl := []meta.Slice{{ID: 2000, Size: 3 * 8192, Len: 3 * 8192}}
	if err := e.CompactChunk(ctx, ino, 1, old, repl); err != nil {
		t.Fatal(err)
	}
	want = append(slices.Clone(repl), want[3:]...)
	check("compaction", minChunkKeys(len(want)))

	// Truncating into the chunk cuts the list and folds it.
	write(meta.Slice{ID: 3000, Size: 10, Len: 10, Pos: 20000})
	if _, err := e.Truncate(ctx, ino, meta.ChunkSize+8192); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReadChunk(ctx, ino, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range meta.Resolve(got, 8192, meta.ChunkSize-8192) {
		if p.ID != 0 {
			t.Fatalf("after truncate, data past the end: %v", p)
		}
	}
	if n := len(chunkKeys(t, store, ino, 1)); n != minChunkKeys(len(got)) {
		t.Fatalf("after truncate: %d keys for %d records", n, len(got))
	}

	// Deleting the file's data deletes the appended keys too.
	write(meta.Slice{ID: 3001, Size: 10, Len: 10, Pos: 100})
	if _, err := e.Truncate(ctx, ino, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(chunkKeys(t, store, ino, 1)); n != 0 {
		t.Fatalf("after truncate to 0: %d keys", n)
	}
	report, err := e.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Problems) > 0 {
		t.Fatalf("check: %v", report.Problems)
	}
}

// TestChunkRowsStaySmall: no chunk key holds more than chunkKeyRecords
// records, whether a long list grows by a big batch or is rewritten; the
// list reads back whole, also after a fold.
func TestChunkRowsStaySmall(t *testing.T) {
	store := memkv.New()
	e, ctx := formatOn(t, store)
	ino := mkfile(t, e, ctx, "img")
	var want []meta.Slice
	check := func(when string) {
		t.Helper()
		got, err := e.ReadChunk(ctx, ino, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d records read, want %d", when, len(got), len(want))
		}
		err = store.View(ctx, func(tx kv.Tx) error {
			return tx.Scan(chunkKey(ino, 0), nil, 0, func(k, v []byte) bool {
				if n := len(v) / sliceLen; n > chunkKeyRecords {
					t.Errorf("%s: key %x holds %d records", when, k, n)
				}
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	id := meta.SliceID(1)
	batch := func(n int) {
		var ws []meta.SliceWrite
		for range n {
			s := meta.Slice{ID: id, Size: 4096, Len: 4096, Pos: uint32(id%16000) * 4096}
			ws = append(ws, meta.SliceWrite{Index: 0, S: s})
			want = append(want, s)
			id++
		}
		if _, err := e.WriteSlices(ctx, ino, ws); err != nil {
			t.Fatal(err)
		}
	}
	batch(200)
	check("one batch of 200")
	for range 80 { // past the fold
		batch(7)
	}
	check("80 more batches")
	// A rewrite (compaction of the first 100 records) splits the list too.
	repl := []meta.Slice{{ID: id, Size: 4096, Len: 4096, Pos: 7}}
	id++
	if err := e.CompactChunk(ctx, ino, 0, slices.Clone(want[:100]), repl); err != nil {
		t.Fatal(err)
	}
	want = append(repl, want[100:]...)
	check("compaction")
	if n := len(chunkKeys(t, store, ino, 0)); n != minChunkKeys(len(want)) {
		t.Fatalf("after compaction: %d keys for %d records, want %d", n, len(want), minChunkKeys(len(want)))
	}
}

// TestVersion1Layout: a volume of format version 1 keeps each chunk under
// its base key alone, so older binaries read it whole.
func TestVersion1Layout(t *testing.T) {
	store := memkv.New()
	e := New(store, Options{})
	t.Cleanup(func() { _ = e.Close() })
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	if err := e.Format(ctx, meta.Format{Name: "t", Version: 1}, false); err != nil {
		t.Fatal(err)
	}
	ino := mkfile(t, e, ctx, "f")
	for i := range 5 {
		if _, err := e.WriteChunk(ctx, ino, 0, meta.Slice{ID: meta.SliceID(1 + i), Size: 10, Len: 10, Pos: uint32(i) * 10}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(chunkKeys(t, store, ino, 0)); n != 1 {
		t.Fatalf("version 1 volume: %d keys for one chunk, want 1", n)
	}
	if got, _ := e.ReadChunk(ctx, ino, 0); len(got) != 5 {
		t.Fatalf("list %v", got)
	}
}

// TestChunkCacheTwoClients runs random writes, compactions, truncations
// and clones through two engines over one store, as two mounts, and after
// each step compares every chunk list each engine reads (cached or not)
// with the one a fresh engine reads from the keys.
func TestChunkCacheTwoClients(t *testing.T) {
	store := memkv.New()
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	a, b := New(&counting{Store: store}, Options{}), New(&counting{Store: store}, Options{})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	if err := a.Format(ctx, meta.Format{Name: "t"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	f := mkfile(t, a, ctx, "img")
	g := mkfile(t, a, ctx, "clone")
	truth := func(ino meta.Ino, index uint32) []meta.Slice {
		fresh := New(&counting{Store: store}, Options{})
		defer fresh.Close()
		if _, err := fresh.Load(ctx); err != nil {
			t.Fatal(err)
		}
		ss, err := fresh.ReadChunk(ctx, ino, index)
		if err != nil {
			t.Fatal(err)
		}
		return ss
	}
	r := rand.New(rand.NewPCG(3, 5))
	for step := range 1500 {
		e := []*Engine{a, b}[r.IntN(2)]
		index := uint32(r.IntN(2))
		var what string
		switch op := r.IntN(40); {
		case op < 36:
			what = "write"
			id, err := e.NewSliceID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := uint32(1 + r.IntN(1<<16))
			_, err = e.WriteChunk(ctx, f, index, meta.Slice{ID: id, Size: n, Len: n, Pos: uint32(r.IntN(meta.ChunkSize - 1<<16))})
			if err != nil {
				t.Fatal(err)
			}
		case op < 37:
			what = "compact"
			old, err := e.ReadChunk(ctx, f, index)
			if err != nil || len(old) < 2 {
				continue
			}
			id, err := e.NewSliceID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ext := meta.Extent(old)
			if err := e.CompactChunk(ctx, f, index, old, []meta.Slice{{ID: id, Size: ext, Len: ext}}); err != nil {
				t.Fatal(err)
			}
		case op < 38:
			what = "truncate"
			if _, err := e.Truncate(ctx, f, uint64(r.Int64N(3*meta.ChunkSize))); err != nil {
				t.Fatal(err)
			}
		case op < 39:
			what = "clone"
			if _, err := e.CopyFileRange(ctx, meta.CopyRequest{SrcIno: f, DstIno: g, Len: 3 * meta.ChunkSize}); err != nil {
				t.Fatal(err)
			}
		default:
			what = "read"
		}
		for _, ino := range []meta.Ino{f, g} {
			attr, err := a.Getattr(ctx, ino)
			if err != nil {
				t.Fatal(err)
			}
			if n := recount(t, b, ctx, ino); attr.Alloc != n {
				t.Fatalf("step %d (%s): inode %d: Alloc %d, chunks show %d", step, what, ino, attr.Alloc, n)
			}
			for i := range uint32(3) {
				want := truth(ino, i)
				for name, e := range map[string]*Engine{"a": a, "b": b} {
					got, err := e.ReadChunk(ctx, ino, i)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("step %d (%s): engine %s reads chunk %d/%d as %v, the keys hold %v", step, what, name, ino, i, got, want)
					}
				}
			}
		}
	}
}

// TestChunkCacheForgetsDeleted: deleting a file drops its cached lists.
func TestChunkCacheForgetsDeleted(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	e.SetOpenCheck(func(meta.Ino) bool { return false })
	ino := mkfile(t, e, ctx, "gone")
	for i := range 3 {
		if _, err := e.WriteChunk(ctx, ino, uint32(i), meta.Slice{ID: meta.SliceID(1 + i), Size: 10, Len: 10}); err != nil {
			t.Fatal(err)
		}
	}
	cached := func() int {
		e.chunks.mu.Lock()
		defer e.chunks.mu.Unlock()
		return len(e.chunks.inodes[ino])
	}
	if n := cached(); n != 3 {
		t.Fatalf("%d chunks cached after three writes, want 3", n)
	}
	if _, err := e.Unlink(ctx, meta.RootIno, "gone"); err != nil {
		t.Fatal(err)
	}
	if n := cached(); n != 0 {
		t.Fatalf("%d chunks still cached after the file was deleted", n)
	}
}

// failing fails the commit of every update while fail is set, after the
// transaction's function ran (so the engine has done all its work).
type failing struct {
	kv.Store
	fail atomic.Bool
}

var errInjected = errors.New("injected commit failure")

func (f *failing) Txn(ctx context.Context, fn func(kv.Tx) error) error {
	return f.Store.Txn(ctx, func(tx kv.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if f.fail.Load() {
			return errInjected
		}
		return nil
	})
}

func (f *failing) Close() error { return nil }

// TestChunkCacheClaims checks that commits append to the cached list in
// place, that a commit that fails after appending leaves no trace in what
// later commits and reads see, and that concurrent appenders and readers
// of one chunk (run under -race) agree with the stored keys. (The last
// part also caught a commit's own chunks moving to the new generation,
// unchanged, for a moment before their new lists replaced them.)
func TestChunkCacheClaims(t *testing.T) {
	store := &failing{Store: memkv.New()}
	e, ctx := formatOn(t, store)
	ino := mkfile(t, e, ctx, "img")
	var want []meta.Slice
	write := func(pos uint32) error {
		id, err := e.NewSliceID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := meta.Slice{ID: id, Size: 4096, Len: 4096, Pos: pos}
		_, err = e.WriteChunk(ctx, ino, 0, s)
		if err == nil {
			want = append(want, s)
		}
		return err
	}
	entry := func() cachedChunk {
		e.chunks.mu.Lock()
		defer e.chunks.mu.Unlock()
		return e.chunks.inodes[ino][0]
	}
	check := func(when string) {
		t.Helper()
		fresh := New(store, Options{})
		defer fresh.Close()
		if _, err := fresh.Load(ctx); err != nil {
			t.Fatal(err)
		}
		for name, eng := range map[string]*Engine{"cached": e, "fresh": fresh} {
			got, err := eng.ReadChunk(ctx, ino, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: the %s engine reads %d records, want %d: %v", when, name, len(got), len(want), got)
			}
		}
	}
	for i := range 40 {
		if err := write(uint32(i) * 8192); err != nil {
			t.Fatal(err)
		}
	}
	check("after 40 writes")

	// The next commits append into the cached list's spare room.
	before := entry()
	if cap(before.list) == len(before.list) {
		if err := write(1 << 20); err != nil {
			t.Fatal(err)
		}
		before = entry()
	}
	if err := write(2 << 20); err != nil {
		t.Fatal(err)
	}
	after := entry()
	if unsafe.SliceData(after.list) != unsafe.SliceData(before.list) || len(after.list) != len(before.list)+1 {
		t.Fatalf("a commit copied the cached list (%d records, room for %d) instead of appending in place", len(before.list), cap(before.list))
	}

	// A commit that fails after appending in place: its record must not
	// show, and the claim must be given back for the next commit.
	store.fail.Store(true)
	if err := write(3 << 20); !errors.Is(err, errInjected) {
		t.Fatalf("write with a failing commit: %v", err)
	}
	store.fail.Store(false)
	check("after a failed commit")
	if entry().claimed {
		t.Fatal("the failed commit kept its claim on the cached list")
	}
	if err := write(4 << 20); err != nil {
		t.Fatal(err)
	}
	check("after the write that followed the failed one")

	// Concurrent appenders and readers.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				id, err := e.NewSliceID(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				s := meta.Slice{ID: id, Size: 512, Len: 512, Pos: uint32(w*1000+i) * 4096}
				if _, err := e.WriteChunk(ctx, ino, 0, s); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want = append(want, s)
				mu.Unlock()
				if _, err := e.ReadChunk(ctx, ino, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := e.ReadChunk(ctx, ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records after concurrent writes, want %d", len(got), len(want))
	}
	// Concurrent commits land in some order: compare as sets, and the
	// cached engine with a fresh one exactly.
	sortByID := func(ss []meta.Slice) []meta.Slice {
		ss = slices.Clone(ss)
		slices.SortFunc(ss, func(a, b meta.Slice) int { return cmp.Compare(a.ID, b.ID) })
		return ss
	}
	if !slices.Equal(sortByID(got), sortByID(want)) {
		t.Fatal("the records after concurrent writes are not the ones written")
	}
	want = got
	check("after concurrent writes")
}

// TestNewFileChunkKnownEmpty: the first commit to a file this client just
// created reads no chunk keys (a Scan, which on Redis turns the commit
// into a WATCHed MULTI/EXEC); a write by another client first is still
// seen, by the generation it raised.
func TestNewFileChunkKnownEmpty(t *testing.T) {
	store := memkv.New()
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	ca, cb := &counting{Store: store}, &counting{Store: store}
	a, b := New(ca, Options{}), New(cb, Options{})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	if err := a.Format(ctx, meta.Format{Name: "t"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s1 := meta.Slice{ID: 1, Size: 100, Len: 100}
	s2 := meta.Slice{ID: 2, Size: 50, Len: 50, Pos: 200}
	mine := mkfile(t, a, ctx, "mine")
	ca.scanned()
	if _, err := a.WriteChunk(ctx, mine, 0, s1); err != nil {
		t.Fatal(err)
	}
	if n := ca.scanned(); n != 0 {
		t.Errorf("first commit to a new file scanned %d times, want 0", n)
	}
	theirs := mkfile(t, a, ctx, "theirs")
	for i, c := range []struct {
		e *Engine
		s meta.Slice
	}{{b, s1}, {a, s2}} {
		if _, err := c.e.WriteChunk(ctx, theirs, 0, c.s); err != nil {
			t.Fatal(i, err)
		}
	}
	for _, e := range []*Engine{a, b} {
		if got, err := e.ReadChunk(ctx, theirs, 0); err != nil || !slices.Equal(got, []meta.Slice{s1, s2}) {
			t.Fatalf("list after the other client's write: %v, %v; want %v", got, err, []meta.Slice{s1, s2})
		}
	}
}

// grouped runs its next Txn as a group commit that fails would: ahead
// (another operation of the group) first, then fn, in one transaction
// that is then rolled back (a COMMIT that failed), and the call fails.
type grouped struct {
	kv.Store
	ahead atomic.Pointer[func(kv.Tx) error]
}

func (g *grouped) Txn(ctx context.Context, fn func(kv.Tx) error) error {
	ahead := g.ahead.Swap(nil)
	if ahead == nil {
		return g.Store.Txn(ctx, fn)
	}
	return g.Store.Txn(ctx, func(tx kv.Tx) error {
		if err := (*ahead)(tx); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		return errInjected
	})
}

func (g *grouped) Close() error { return nil }

// inTx runs every transaction of an engine inside the transaction it is
// given (nil: in the store's own).
type inTx struct {
	kv.Store
	tx kv.Tx
}

func (s *inTx) Txn(ctx context.Context, fn func(kv.Tx) error) error {
	if s.tx != nil {
		return fn(s.tx)
	}
	return s.Store.Txn(ctx, fn)
}

func (s *inTx) View(ctx context.Context, fn func(kv.Tx) error) error {
	if s.tx != nil {
		return fn(s.tx)
	}
	return s.Store.View(ctx, fn)
}

func (s *inTx) Close() error { return nil }

// TestChunkCacheUncommittedRead: a list a transaction read is cached only
// once that transaction has committed. In a group commit an operation
// runs after others in one transaction and so reads their writes; here
// another client's append ahead of ours gave the file a new generation,
// our append read the list at that generation, and the group's commit
// failed. A third client then commits a different list at that same
// generation: our engine must read that one, not the rolled-back list.
// (Caught without the fix: the engine read the rolled-back record.)
func TestChunkCacheUncommittedRead(t *testing.T) {
	mem := memkv.New()
	store := &grouped{Store: mem}
	a, ctx := formatOn(t, store)
	f := mkfile(t, a, ctx, "f")
	slice := func(id meta.SliceID, pos uint32) meta.Slice {
		return meta.Slice{ID: id, Size: 4096, Len: 4096, Pos: pos}
	}
	s1, s2, s3, s4 := slice(1001, 0), slice(1002, 8192), slice(1003, 16384), slice(1004, 24576)
	if _, err := a.WriteChunk(ctx, f, 0, s1); err != nil {
		t.Fatal(err)
	}
	other := &inTx{Store: mem}
	b := New(other, Options{})
	defer b.Close()
	if _, err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ahead := func(tx kv.Tx) error {
		other.tx = tx
		defer func() { other.tx = nil }()
		_, err := b.WriteChunk(ctx, f, 0, s2)
		return err
	}
	store.ahead.Store(&ahead)
	if _, err := a.WriteChunk(ctx, f, 0, s4); !errors.Is(err, errInjected) {
		t.Fatalf("the grouped append: %v, want the injected failure", err)
	}
	c := New(mem, Options{})
	defer c.Close()
	if _, err := c.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteChunk(ctx, f, 0, s3); err != nil {
		t.Fatal(err)
	}
	want := []meta.Slice{s1, s3}
	for name, e := range map[string]*Engine{"ours": a, "the writer's": c} {
		got, err := e.ReadChunk(ctx, f, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s engine reads %v, the keys hold %v", name, got, want)
		}
	}
}
