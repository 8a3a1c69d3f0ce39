package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

// testVolume is a volume on memkv whose blocks are in a memstore.
type testVolume struct {
	t   *testing.T
	ctx context.Context
	e   meta.Engine
	f   meta.Format
	raw *hookStore
}

func newTestVolume(t *testing.T) *testVolume {
	ctx := t.Context()
	e := kvmeta.New(memkv.New(), kvmeta.Options{})
	t.Cleanup(func() { e.Close() })
	f := meta.Format{Name: "t", UUID: "0b8d1a6e-2f0c-4b7e-9a55-3d7c1f2e4a90", Storage: "mem", BlockSize: 1 << 20}
	if err := e.Format(ctx, f, false); err != nil {
		t.Fatal(err)
	}
	return &testVolume{t: t, ctx: ctx, e: e, f: f, raw: &hookStore{Store: memstore.New()}}
}

// file creates name in the root holding n bytes of fill.
func (v *testVolume) file(name string, n int, fill byte) meta.Ino {
	ent, err := v.e.Mknod(v.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644})
	if err != nil {
		v.t.Fatal(err)
	}
	if n > 0 {
		v.write(ent.Ino, n, fill)
	}
	return ent.Ino
}

// write makes ino's data n bytes of fill, in a new slice whose blocks it
// stores (checksummed, as the volume's format wants).
func (v *testVolume) write(ino meta.Ino, n int, fill byte) meta.Slice {
	if _, err := v.e.Truncate(v.ctx, ino, 0); err != nil {
		v.t.Fatal(err)
	}
	id, err := v.e.NewSliceID(v.ctx)
	if err != nil {
		v.t.Fatal(err)
	}
	s := meta.Slice{ID: id, Size: uint32(n), Len: uint32(n)}
	sum := object.WithChecksum(v.raw.Store)
	for i := range data.BlockCount(v.f.BlockSize, s.Size) {
		b := bytes.Repeat([]byte{fill}, data.BlockLen(v.f.BlockSize, s.Size, i))
		if err := sum.Put(v.ctx, data.BlockKey(id, i, len(b)), bytes.NewReader(b), int64(len(b))); err != nil {
			v.t.Fatal(err)
		}
	}
	if _, err := v.e.WriteChunk(v.ctx, ino, 0, s); err != nil {
		v.t.Fatal(err)
	}
	return s
}

// backup backs the volume up to dest, checks the backup whole and no
// snapshot left, and returns its manifest and how many times it listed
// dest's blocks.
func (v *testVolume) backup(dest *hookStore, name string) (Manifest, int) {
	v.t.Helper()
	dest.blockLists()
	m, err := Create(v.ctx, Source{Engine: v.e, Format: v.f, Store: v.raw}, dest, Options{Name: name})
	if err != nil {
		v.t.Fatalf("backup %s: %v", name, err)
	}
	lists := dest.blockLists()
	r, err := Verify(v.ctx, dest, m, nil, 4, nil)
	if err != nil || r.Damaged() {
		v.t.Fatalf("verify of backup %s: %+v, %v", name, r, err)
	}
	if snaps, _ := v.e.(meta.Snapshots).ListSnapshots(v.ctx); len(snaps) != 0 {
		v.t.Fatalf("backup %s left snapshots %+v", name, snaps)
	}
	return m, lists
}

// hookStore is a store that counts Lists and can hook Gets.
type hookStore struct {
	object.Store
	mu    sync.Mutex
	lists int
	onGet func(key string) error
}

func (s *hookStore) List(ctx context.Context, prefix, after string, limit int) ([]object.Info, error) {
	if strings.HasPrefix(prefix, data.BlockPrefix) {
		s.mu.Lock()
		s.lists++
		s.mu.Unlock()
	}
	return s.Store.List(ctx, prefix, after, limit)
}

func (s *hookStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	s.mu.Lock()
	hook := s.onGet
	s.mu.Unlock()
	if hook != nil {
		if err := hook(key); err != nil {
			return nil, err
		}
	}
	return s.Store.Get(ctx, key, off, limit)
}

func (s *hookStore) blockLists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.lists
	s.lists = 0
	return n
}

// TestIncremental: the first backup lists the destination's blocks, the
// next ones trust the newest backup's index and copy only new blocks; a
// destination that lost blocks the index names is caught by the spot
// check and listed; without an index it is listed.
func TestIncremental(t *testing.T) {
	v := newTestVolume(t)
	for i := range 20 {
		v.file(string(rune('a'+i)), 1<<20+100, byte(i))
	}
	dest := &hookStore{Store: memstore.New()}
	m, lists := v.backup(dest, "one")
	if m.Blocks != 40 || m.Copied != 40 || lists != 1 {
		t.Fatalf("first backup: %+v", m)
	}
	newSlice := v.write(v.file("new", 0, 0), 100, 99)
	m, lists = v.backup(dest, "two")
	if m.Blocks != 41 || m.Copied != 1 || lists != 0 || m.Stored != 20*object.StoredSize(1<<20)+21*object.StoredSize(100) {
		t.Fatalf("incremental backup: %+v", m)
	}
	// Lost blocks: those of the older files.
	for _, k := range blockKeys(t, dest) {
		if k != data.BlockKey(newSlice.ID, 0, 100) {
			must(t, dest.Delete(v.ctx, k))
		}
	}
	m, lists = v.backup(dest, "three")
	if m.Copied != 40 || lists != 1 {
		t.Fatalf("backup after losing 40 blocks (%d lists): %+v", lists, m)
	}
	must(t, dest.Delete(v.ctx, indexKey("three")))
	m, lists = v.backup(dest, "four")
	if m.Copied != 0 || lists != 1 {
		t.Fatalf("backup without the last index: %+v", m)
	}
	if _, err := Delete(v.ctx, dest, "four", false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dest.Head(v.ctx, indexKey("four")); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("delete left the block index: %v", err)
	}
}

// TestBlockGone: a block of the live tree that is freed and deleted
// before the backup copies it sends the backup to a snapshot, which
// holds the tree as it is then.
func TestBlockGone(t *testing.T) {
	v := newTestVolume(t)
	v.file("a", 100, 1)
	b := v.file("b", 100, 2)
	dest := &hookStore{Store: memstore.New()}
	v.backup(dest, "one")
	c := v.file("c", 100, 3)
	var once sync.Once
	var fresh meta.Slice
	v.raw.onGet = func(key string) error {
		var err error
		once.Do(func() {
			// The write frees c's slice; the cleaner deletes its block.
			v.raw.onGet = nil
			fresh = v.write(c, 200, 4)
			v.write(b, 300, 5)
			must(t, v.raw.Store.Delete(v.ctx, key))
			err = object.ErrNotExist
		})
		return err
	}
	m, _ := v.backup(dest, "two")
	if m.Blocks != 3 || m.Bytes != 600 || fresh.ID == 0 {
		t.Fatalf("backup after a block went: %+v", m)
	}
	if _, err := dest.Head(v.ctx, data.BlockKey(fresh.ID, 0, 200)); err != nil {
		t.Fatalf("the snapshot's block of c was not copied: %v", err)
	}
}

func blockKeys(t *testing.T, s object.Store) []string {
	sizes, err := listBlocks(t.Context(), s)
	must(t, err)
	var out []string
	for k := range sizes {
		out = append(out, k)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckDest: a name taken and another volume's destination are
// refused; the newest backup is the base.
func TestCheckDest(t *testing.T) {
	v := newTestVolume(t)
	v.file("a", 100, 1)
	dest := &hookStore{Store: memstore.New()}
	v.backup(dest, "one")
	v.backup(dest, "two")
	src := Source{Engine: v.e, Format: v.f, Store: v.raw}
	if _, err := Create(v.ctx, src, dest, Options{Name: "one"}); !errors.Is(err, ErrExists) {
		t.Fatalf("backup under a taken name: %v", err)
	}
	base, err := checkDest(v.ctx, dest, v.f, "three")
	if err != nil || base == nil || base.Name != "two" {
		t.Fatalf("base %+v, %v; want two", base, err)
	}
	w := newTestVolume(t)
	w.f.UUID = "5c1e0f3a-9b2d-4e6f-8a7b-1c2d3e4f5a6b"
	if _, err := Create(w.ctx, Source{Engine: w.e, Format: w.f, Store: w.raw}, dest, Options{Name: "other"}); !errors.Is(err, ErrOtherVolume) {
		t.Fatalf("backup of another volume: %v", err)
	}
}
