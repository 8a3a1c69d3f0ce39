package object_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/filestore"
	"shoal/internal/object/memstore"
	"shoal/internal/object/objecttest"
)

const seg = 16 << 10 // the wrapper's segment size

func TestChecksumConformanceMem(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return object.WithChecksum(memstore.New()) })
}

func TestChecksumConformanceFile(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store {
		fs, err := filestore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return object.WithChecksum(fs)
	})
}

func randData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// newChecked returns a checksum store over memstore and the raw store.
func newChecked(t testing.TB) (object.Store, *memstore.Store) {
	raw := memstore.New()
	return object.WithChecksum(raw), raw
}

func mustPut(t testing.TB, s object.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func rawBytes(t testing.TB, raw object.Store, key string) []byte {
	t.Helper()
	rc, err := raw.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// read returns the bytes of a Get(off, limit), or the error of the Get or
// of reading its body.
func read(s object.Store, key string, off, limit int64) ([]byte, error) {
	rc, err := s.Get(context.Background(), key, off, limit)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// want returns what Get(off, limit) of data must yield.
func want(data []byte, off, limit int64) []byte {
	n := int64(len(data))
	from := min(off, n)
	to := n
	if limit >= 0 {
		to = min(n, off+limit)
	}
	return data[from:max(from, to)]
}

func TestChecksumStoredSize(t *testing.T) {
	for _, n := range []int64{0, 1, 100, seg - 1, seg, seg + 1, 4 << 20, 4<<20 - 3} {
		s := object.StoredSize(n)
		s2, raw := newChecked(t)
		mustPut(t, s2, "k", randData(1, int(n)))
		if got := int64(len(rawBytes(t, raw, "k"))); got != s {
			t.Fatalf("StoredSize(%d) = %d, stored %d", n, s, got)
		}
		info, err := s2.Head(context.Background(), "k")
		if err != nil || info.Size != n {
			t.Fatalf("Head of %d bytes = %+v, %v", n, info, err)
		}
	}
}

func TestChecksumRangesAtBoundaries(t *testing.T) {
	s, _ := newChecked(t)
	const size = 3*seg + 777
	data := randData(2, size)
	mustPut(t, s, "b", data)
	var offs []int64
	for b := int64(0); b <= size+seg; b += seg {
		offs = append(offs, b-1, b, b+1)
	}
	offs = append(offs, size-1, size, size+1, 2*size)
	limits := []int64{-1, 0, 1, 2, 4096, seg - 1, seg, seg + 1, 2*seg + 5, size, 1 << 50}
	for _, off := range offs {
		if off < 0 {
			continue
		}
		for _, limit := range limits {
			got, err := read(s, "b", off, limit)
			if err != nil {
				t.Fatalf("Get(%d, %d): %v", off, limit, err)
			}
			if w := want(data, off, limit); !bytes.Equal(got, w) {
				t.Fatalf("Get(%d, %d): %d bytes, want %d", off, limit, len(got), len(w))
			}
		}
	}
}

// countStore counts Gets and the stored bytes they deliver.
type countStore struct {
	object.Store
	gets, bytes atomic.Int64
}

func (c *countStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	c.gets.Add(1)
	rc, err := c.Store.Get(ctx, key, off, limit)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	c.bytes.Add(int64(len(b)))
	return io.NopCloser(bytes.NewReader(b)), err
}

func TestChecksumRangedReadCost(t *testing.T) {
	cs := &countStore{Store: memstore.New()}
	s := object.WithChecksum(cs)
	const size = 4 << 20
	data := randData(3, size)
	mustPut(t, s, "big", data)
	cases := []struct {
		off, limit int64
		gets       int64
		maxBytes   int64
	}{
		{0, 4096, 1, seg + 100},             // near the start: header + record 0
		{1 << 20, 4096, 1, seg + 100},       // middle: one record
		{size - 4096, 4096, 1, seg + 100},   // tail
		{seg - 2048, 4096, 1, 2*seg + 100},  // straddles a boundary: two records
		{0, -1, 1, object.StoredSize(size)}, // whole
		{size + 10, 100, 2, 100},            // past the end: one empty Get, then the header
		{2*seg + 1, seg, 1, 2*seg + 100},    // two records
		{size - 1, -1, 1, seg + 100},        // last byte to the end
	}
	for _, c := range cases {
		cs.gets.Store(0)
		cs.bytes.Store(0)
		got, err := read(s, "big", c.off, c.limit)
		if err != nil || !bytes.Equal(got, want(data, c.off, c.limit)) {
			t.Fatalf("Get(%d, %d) = %d bytes, %v", c.off, c.limit, len(got), err)
		}
		if g, b := cs.gets.Load(), cs.bytes.Load(); g != c.gets || b > c.maxBytes {
			t.Errorf("Get(%d, %d): %d store Gets of %d bytes; want %d Gets, at most %d bytes", c.off, c.limit, g, b, c.gets, c.maxBytes)
		}
	}
}

func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, object.ErrCorrupt) {
		t.Fatalf("%s: err = %v, want ErrCorrupt", what, err)
	}
}

// ranges are the reads tried on damaged objects.
var ranges = [][2]int64{{0, -1}, {0, 1}, {0, 100}, {5, 500}, {999, 1}, {seg - 1, 2}, {seg, -1}, {seg + 50, 10}, {2 * seg, -1}, {3 * seg, 5}}

// checkDamaged reads key through s in every way: the whole read must fail
// with ErrCorrupt, and every other read must fail or return exact bytes.
func checkDamaged(t *testing.T, s object.Store, key string, data []byte, what string) {
	t.Helper()
	_, err := read(s, key, 0, -1)
	wantCorrupt(t, what+": whole read", err)
	for _, r := range ranges {
		got, err := read(s, key, r[0], r[1])
		if err == nil && !bytes.Equal(got, want(data, r[0], r[1])) {
			t.Fatalf("%s: Get(%d, %d) returned wrong bytes without an error", what, r[0], r[1])
		}
		if err != nil && !errors.Is(err, object.ErrCorrupt) {
			t.Fatalf("%s: Get(%d, %d): %v, want ErrCorrupt", what, r[0], r[1], err)
		}
	}
}

func TestChecksumEveryBitFlip(t *testing.T) {
	for _, size := range []int{0, 1, 1000} {
		s, raw := newChecked(t)
		data := randData(4, size)
		mustPut(t, s, "f", data)
		good := rawBytes(t, raw, "f")
		for bit := 0; bit < len(good)*8; bit++ {
			bad := bytes.Clone(good)
			bad[bit/8] ^= 1 << (bit % 8)
			mustPut(t, raw, "f", bad)
			checkDamaged(t, s, "f", data, fmt.Sprintf("size %d, bit %d flipped", size, bit))
		}
	}
}

func TestChecksumBitFlipsLarge(t *testing.T) {
	s, raw := newChecked(t)
	data := randData(5, 2*seg+300)
	mustPut(t, s, "f", data)
	good := rawBytes(t, raw, "f")
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 300; i++ {
		bit := r.IntN(len(good) * 8)
		bad := bytes.Clone(good)
		bad[bit/8] ^= 1 << (bit % 8)
		mustPut(t, raw, "f", bad)
		checkDamaged(t, s, "f", data, fmt.Sprintf("bit %d flipped", bit))
	}
}

func TestChecksumEveryTruncation(t *testing.T) {
	s, raw := newChecked(t)
	data := randData(6, 1000)
	mustPut(t, s, "t", data)
	good := rawBytes(t, raw, "t")
	for n := 0; n < len(good); n++ {
		mustPut(t, raw, "t", good[:n])
		checkDamaged(t, s, "t", data, fmt.Sprintf("truncated to %d", n))
	}
}

func TestChecksumTruncationsLarge(t *testing.T) {
	s, raw := newChecked(t)
	data := randData(7, 3*seg+500)
	mustPut(t, s, "t", data)
	good := rawBytes(t, raw, "t")
	var lens []int
	for n := 0; n < len(good); n += 997 {
		lens = append(lens, n)
	}
	for b := int(object.StoredSize(0)); b < len(good); b += seg + 12 {
		for d := -14; d <= 14; d++ {
			lens = append(lens, b+d)
		}
	}
	for _, n := range lens {
		if n < 0 || n >= len(good) {
			continue
		}
		mustPut(t, raw, "t", good[:n])
		checkDamaged(t, s, "t", data, fmt.Sprintf("truncated to %d of %d", n, len(good)))
	}
}

func TestChecksumExtended(t *testing.T) {
	for _, size := range []int{0, 1000, seg, 2*seg + 1} {
		s, raw := newChecked(t)
		data := randData(8, size)
		mustPut(t, s, "x", data)
		good := rawBytes(t, raw, "x")
		for _, extra := range []int{1, 11, 12, 13, 100, seg + 12} {
			mustPut(t, raw, "x", append(bytes.Clone(good), randData(uint64(extra), extra)...))
			checkDamaged(t, s, "x", data, fmt.Sprintf("size %d extended by %d", size, extra))
		}
	}
}

func TestChecksumForeignAndSwapped(t *testing.T) {
	ctx := context.Background()
	s, raw := newChecked(t)
	mustPut(t, raw, "plain", []byte(strings.Repeat("not checksummed ", 100)))
	_, err := read(s, "plain", 0, -1)
	wantCorrupt(t, "foreign object", err)
	if !strings.Contains(err.Error(), "plain") || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("error should name the key and the bad magic: %v", err)
	}
	if !object.IsPermanent(err) {
		t.Fatalf("corruption should be Permanent: %v", err)
	}
	_, err = s.Get(ctx, "plain", 0, 0)
	wantCorrupt(t, "foreign object, limit 0", err)

	// Swap two whole records of a valid object: each record's checksum
	// covers its index, so this is caught.
	data := randData(10, 2*seg+10)
	mustPut(t, s, "sw", data)
	good := rawBytes(t, raw, "sw")
	h, r := int(object.StoredSize(0)), seg+12
	bad := bytes.Clone(good)
	copy(bad[h:h+r], good[h+r:h+2*r])
	copy(bad[h+r:h+2*r], good[h:h+r])
	mustPut(t, raw, "sw", bad)
	checkDamaged(t, s, "sw", data, "records swapped")
	_, err = read(s, "sw", seg+5, 10)
	if err == nil || !strings.Contains(err.Error(), "segment 1") {
		t.Fatalf("error should name segment 1: %v", err)
	}
}

func TestChecksumHeadList(t *testing.T) {
	ctx := context.Background()
	s, raw := newChecked(t)
	mustPut(t, s, "l/a", randData(11, 5000))
	mustPut(t, s, "l/b", nil)
	mustPut(t, raw, "l/c", make([]byte, int(object.StoredSize(0))+5)) // no data length stores to this
	infos, err := s.List(ctx, "l/", "", 0)
	if err != nil || len(infos) != 3 {
		t.Fatalf("List = %+v, %v", infos, err)
	}
	if infos[0].Size != 5000 || infos[1].Size != 0 || infos[2].Size != -1 {
		t.Fatalf("List sizes = %d %d %d, want 5000 0 -1", infos[0].Size, infos[1].Size, infos[2].Size)
	}
	_, err = s.Head(ctx, "l/c")
	wantCorrupt(t, "Head of impossible size", err)
	if _, err := s.Head(ctx, "l/none"); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("Head(absent) = %v", err)
	}
}

func TestChecksumReplaysSeekableBody(t *testing.T) {
	f := object.WithFaults(memstore.New())
	s := object.WithChecksum(object.WithRetry(f, 3, 0))
	data := randData(12, 3*seg+5)
	f.DiePuts(1, 1000)
	mustPut(t, s, "r", data)
	if st := f.Stats(); st.Puts != 2 {
		t.Fatalf("Puts = %d, want 2 (one died, one replayed)", st.Puts)
	}
	got, err := read(s, "r", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after replayed Put: %d bytes, %v", len(got), err)
	}
	// A body that is not an io.Seeker is buffered by the retry wrapper.
	f.DiePuts(1, 1000)
	if err := s.Put(context.Background(), "r2", io.MultiReader(bytes.NewReader(data)), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	got, err = read(s, "r2", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after buffered replay: %d bytes, %v", len(got), err)
	}
}

func TestChecksumUnwrap(t *testing.T) {
	raw := memstore.New()
	s := object.WithChecksum(raw)
	if u, ok := s.(object.Unwrapper); !ok || u.Unwrap() != raw {
		t.Fatal("Unwrap does not give the wrapped store")
	}
	if !strings.Contains(s.String(), "checksum") {
		t.Fatalf("String = %q", s.String())
	}
}

// benchStores runs fn over memstore and filestore, raw and checksummed.
func benchStores(b *testing.B, fn func(b *testing.B, s object.Store)) {
	file := func(b *testing.B) object.Store {
		fs, err := filestore.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		return fs
	}
	b.Run("mem/raw", func(b *testing.B) { fn(b, memstore.New()) })
	b.Run("mem/checksum", func(b *testing.B) { fn(b, object.WithChecksum(memstore.New())) })
	b.Run("file/raw", func(b *testing.B) { fn(b, file(b)) })
	b.Run("file/checksum", func(b *testing.B) { fn(b, object.WithChecksum(file(b))) })
}

func BenchmarkChecksumPut4M(b *testing.B) {
	data := randData(13, 4<<20)
	benchStores(b, func(b *testing.B, s object.Store) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			mustPut(b, s, "k", data)
		}
	})
}

func BenchmarkChecksumGet4M(b *testing.B) {
	data := randData(14, 4<<20)
	benchStores(b, func(b *testing.B, s object.Store) {
		mustPut(b, s, "k", data)
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			if _, err := read(s, "k", 0, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkChecksumGet4KRandom(b *testing.B) {
	data := randData(15, 4<<20)
	benchStores(b, func(b *testing.B, s object.Store) {
		mustPut(b, s, "k", data)
		r := rand.New(rand.NewPCG(1, 2))
		b.SetBytes(4096)
		buf := make([]byte, 4096)
		for i := 0; i < b.N; i++ {
			rc, err := s.Get(context.Background(), "k", int64(r.IntN(1024))*4096, 4096)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(rc, buf); err != nil {
				b.Fatal(err)
			}
			rc.Close()
		}
	})
}

// TestChecksumUnderDataLayer writes a file's blocks through the data layer
// into a checksummed store, flips one stored bit, and checks that the data
// layer's reads fail with data.ErrCorrupt (the same value as
// object.ErrCorrupt) instead of returning the flipped byte, for whole-block
// and ranged reads alike.
func TestChecksumUnderDataLayer(t *testing.T) {
	ctx := context.Background()
	raw := memstore.New()
	ds := data.New(object.WithChecksum(raw), data.Config{BlockSize: 2 << 20, CacheSize: -1, ReadAhead: -1})
	defer ds.Close()
	var committed []meta.Slice
	var next meta.SliceID
	w := ds.NewWriter(2, func(context.Context) (meta.SliceID, error) { next++; return next, nil },
		func(_ context.Context, ws []meta.SliceWrite) error {
			for _, r := range ws {
				committed = append(committed, r.S)
			}
			return nil
		})
	content := randData(30, 2500<<10)
	if err := w.Write(ctx, 0, content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	readAt := func(off, n int) ([]byte, error) {
		buf := make([]byte, n)
		k, err := ds.NewReader(2).Read(ctx, 0, committed, uint32(off), buf)
		return buf[:k], err
	}
	if got, err := readAt(0, len(content)); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("clean read: %d bytes, %v", len(got), err)
	}
	key := data.BlockKey(committed[0].ID, 0, 2<<20)
	stored := rawBytes(t, raw, key)
	stored[int(object.StoredSize(0))+seg+12+100] ^= 0x10 // data byte seg+100, in segment 1
	mustPut(t, raw, key, stored)
	for _, r := range [][2]int{{0, len(content)}, {seg, 4096}, {seg + 4000, 10}} {
		got, err := readAt(r[0], r[1])
		if !errors.Is(err, data.ErrCorrupt) || !errors.Is(err, object.ErrCorrupt) {
			t.Fatalf("read(%d, %d) of a flipped block = %d bytes, %v; want ErrCorrupt", r[0], r[1], len(got), err)
		}
	}
	// A random read elsewhere in the block fetches only its own segment,
	// which is intact.
	const far = 1536<<10 + 10 // past the data layer's sequential-read slack
	if got, err := readAt(far, 100); err != nil || !bytes.Equal(got, content[far:far+100]) {
		t.Fatalf("read of an intact segment of the damaged block: %v", err)
	}
}

// TestChecksumOverRetry is the recommended stack, WithChecksum over
// WithRetry: a body that breaks mid-read is resumed by the retry wrapper
// below, and the checksum wrapper sees one intact stream.
func TestChecksumOverRetry(t *testing.T) {
	f := object.WithFaults(memstore.New())
	s := object.WithChecksum(object.WithRetry(f, 4, 0))
	data := randData(31, 5*seg+77)
	mustPut(t, s, "k", data)
	for _, r := range [][2]int64{{0, -1}, {seg + 3, 3 * seg}, {4 * seg, -1}} {
		f.BreakReads(2, 5000)
		got, err := read(s, "k", r[0], r[1])
		if err != nil || !bytes.Equal(got, want(data, r[0], r[1])) {
			t.Fatalf("Get(%d, %d) over breaking bodies: %d bytes, %v", r[0], r[1], len(got), err)
		}
	}
	// Corruption is Permanent: the retry wrapper does not retry it, and
	// a stack with the checksum wrapper below the retry one fails at once.
	raw := f.Unwrap()
	stored := rawBytes(t, raw, "k")
	stored[len(stored)-20] ^= 1
	mustPut(t, raw, "k", stored)
	inner := object.WithRetry(object.WithChecksum(raw), 4, time.Hour)
	start := time.Now()
	if _, err := read(inner, "k", 0, -1); !errors.Is(err, object.ErrCorrupt) || time.Since(start) > time.Minute {
		t.Fatalf("corrupt read under retry: %v after %v", err, time.Since(start))
	}
}
