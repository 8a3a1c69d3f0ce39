package gc_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/gc"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/object/filestore"
	"shoal/internal/object/memstore"
)

const blockSize = 16 << 10

// env is a volume over memkv and memstore.
type env struct {
	t     *testing.T
	ctx   context.Context
	eng   *kvmeta.Engine
	store object.Store
	data  *data.Store
}

func newEnv(t *testing.T) *env {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	f := meta.Format{Name: "gc", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: blockSize}
	if err := eng.Format(ctx, f, false); err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	ds := data.New(store, data.Config{BlockSize: blockSize, CacheSize: -1})
	t.Cleanup(func() { ds.Close(); eng.Close() })
	return &env{t: t, ctx: ctx, eng: eng, store: store, data: ds}
}

func content(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// create makes an empty file.
func (e *env) create(name string) meta.Ino {
	ent, err := e.eng.Mknod(e.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return ent.Ino
}

// writer returns a Writer for ino whose commits go through hold first.
func (e *env) writer(ino meta.Ino, hold func()) *data.Writer {
	return e.data.NewWriter(ino, e.eng.NewSliceID, func(ctx context.Context, ws []meta.SliceWrite) error {
		if hold != nil {
			hold()
		}
		_, err := e.eng.WriteSlices(ctx, ino, ws)
		return err
	})
}

// write creates name with b as content, committed.
func (e *env) write(name string, b []byte) meta.Ino {
	ino := e.create(name)
	w := e.writer(ino, nil)
	if err := w.Write(e.ctx, 0, b); err != nil {
		e.t.Fatal(err)
	}
	if err := w.Close(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return ino
}

// readBack checks that ino (one chunk at most) reads as want.
func (e *env) readBack(ino meta.Ino, want []byte) {
	e.t.Helper()
	slices, err := e.eng.ReadChunk(e.ctx, ino, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	got := make([]byte, len(want))
	n, err := e.data.NewReader(ino).Read(e.ctx, 0, slices, 0, got)
	if err != nil || n != len(want) || !bytes.Equal(got, want) {
		e.t.Fatalf("inode %d reads %d bytes, %v; want its %d bytes", ino, n, err, len(want))
	}
}

// stray puts an object no slice refers to.
func (e *env) stray(id meta.SliceID, index, size int) string {
	key := data.BlockKey(id, index, size)
	if err := e.store.Put(e.ctx, key, bytes.NewReader(make([]byte, size)), int64(size)); err != nil {
		e.t.Fatal(err)
	}
	return key
}

func (e *env) run(o gc.Options) *gc.Report {
	e.t.Helper()
	o.BlockSize = blockSize
	rep, err := gc.Run(e.ctx, e.eng, e.store, o)
	if err != nil {
		e.t.Fatalf("gc: %v", err)
	}
	return rep
}

func (e *env) exists(key string) bool {
	_, err := e.store.Head(e.ctx, key)
	if err != nil && !errors.Is(err, object.ErrNotExist) {
		e.t.Fatal(err)
	}
	return err == nil
}

func TestCleanVolume(t *testing.T) {
	e := newEnv(t)
	a := content(1, 3*blockSize+100)
	ino := e.write("a", a)
	e.write("b", content(2, 10))
	rep := e.run(gc.Options{})
	if rep.Slices != 2 || rep.Live.Objects != 5 || rep.Objects.Objects != 5 {
		t.Fatalf("report = %+v; want 2 slices, 5 live objects", rep)
	}
	if rep.Leaked.Objects+rep.Young.Objects+rep.Foreign.Objects+rep.FreedObjs.Objects != 0 || rep.Damaged() {
		t.Fatalf("clean volume reported garbage or damage: %+v", rep)
	}
	if rep.Clock != "store" || rep.Cutoff != rep.Start.Add(-gc.DefaultGrace) {
		t.Fatalf("clock %q start %v cutoff %v", rep.Clock, rep.Start, rep.Cutoff)
	}
	e.readBack(ino, a)
}

func TestLeakedDeletedAfterGrace(t *testing.T) {
	e := newEnv(t)
	a := content(3, 2*blockSize)
	ino := e.write("a", a)
	k1, k2 := e.stray(900001, 0, blockSize), e.stray(900002, 1, 77)
	foreign := "chunks/0/0/junk"
	e.stray(0, 0, 1) // chunks/0/0/0_0_1: id 0 is never a slice
	if err := e.store.Put(e.ctx, foreign, strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}

	// Default grace: the strays are young, reported and kept.
	rep := e.run(gc.Options{})
	if rep.Young.Objects != 2 || rep.Leaked.Objects != 0 || rep.Deleted.Objects != 0 {
		t.Fatalf("within grace: %+v", rep)
	}
	if rep.Foreign.Objects != 2 {
		t.Fatalf("foreign = %+v, want 2", rep.Foreign)
	}
	// Dry run with no grace: reported as leaked, nothing deleted.
	rep = e.run(gc.Options{DryRun: true, Grace: time.Nanosecond})
	if rep.Leaked.Objects != 2 || rep.Leaked.Bytes != blockSize+77 || rep.Deleted.Objects != 0 || !e.exists(k1) {
		t.Fatalf("dry run: %+v", rep)
	}
	// For real.
	rep = e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Deleted.Objects != 2 || e.exists(k1) || e.exists(k2) {
		t.Fatalf("delete run: %+v", rep)
	}
	if !e.exists(foreign) || rep.Live.Objects != 2 {
		t.Fatalf("foreign object deleted or live objects miscounted: %+v", rep)
	}
	e.readBack(ino, a)
	if rep = e.run(gc.Options{Grace: time.Nanosecond}); rep.Leaked.Objects != 0 {
		t.Fatalf("second run still finds leaks: %+v", rep)
	}
}

// TestPreparedNamesKept: an empty block object (a block name a mount
// made ahead of its Put) is kept for PreparedGrace whatever a shorter
// grace says, and collected with no grace at all.
func TestPreparedNamesKept(t *testing.T) {
	e := newEnv(t)
	prepared := data.BlockKey(900003, 0, 4096)
	if err := e.store.Put(e.ctx, prepared, bytes.NewReader(nil), 0); err != nil {
		t.Fatal(err)
	}
	stray := e.stray(900004, 0, 100)
	time.Sleep(20 * time.Millisecond)
	rep := e.run(gc.Options{Grace: 10 * time.Millisecond})
	if e.exists(stray) || rep.Deleted.Objects != 1 {
		t.Fatalf("a non-empty stray past a short grace was kept: %+v", rep)
	}
	if !e.exists(prepared) || rep.Young.Objects != 1 {
		t.Fatalf("an empty block name younger than %v was not kept: %+v", gc.PreparedGrace, rep)
	}
	rep = e.run(gc.Options{Grace: time.Nanosecond})
	if e.exists(prepared) || rep.Deleted.Objects != 1 {
		t.Fatalf("no grace: the empty block name was kept: %+v", rep)
	}
}

func TestWrongBlockOfLiveSlice(t *testing.T) {
	e := newEnv(t)
	e.write("a", content(4, blockSize+10))
	slices, err := e.eng.ReadChunk(e.ctx, 2, 0)
	if err != nil || len(slices) != 1 {
		t.Fatalf("ReadChunk = %v, %v", slices, err)
	}
	id := slices[0].ID
	extra := e.stray(id, 2, 5)         // index past the slice's end
	wrong := e.stray(id, 1, blockSize) // right index, wrong size
	rep := e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Mismatched.Objects != 2 || rep.Deleted.Objects != 0 || !e.exists(extra) || !e.exists(wrong) || rep.Live.Objects != 2 {
		t.Fatalf("report = %+v; want 2 mismatched blocks, kept", rep)
	}
}

func TestMissingObjectIsDamage(t *testing.T) {
	e := newEnv(t)
	ino := e.write("a", content(5, 2*blockSize+1))
	slices, _ := e.eng.ReadChunk(e.ctx, ino, 0)
	key := data.BlockKey(slices[0].ID, 1, blockSize)
	if err := e.store.Delete(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	rep := e.run(gc.Options{DryRun: true})
	if !rep.Damaged() || rep.MissingN != 1 || len(rep.Missing) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	m := rep.Missing[0]
	if m.Ino != ino || m.Chunk != 0 || m.Slice != slices[0].ID || len(m.Keys) != 1 || m.Keys[0] != key {
		t.Fatalf("missing = %+v, want inode %d key %s", m, ino, key)
	}
}

func TestFreedSlices(t *testing.T) {
	e := newEnv(t)
	keep := content(6, blockSize+5)
	kino := e.write("keep", keep)
	e.write("gone", content(7, 2*blockSize+3))
	r, err := e.eng.Unlink(e.ctx, meta.RootIno, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.eng.Purge(e.ctx, r.Ino); err != nil {
		t.Fatal(err)
	}
	rep := e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Freed != 1 || rep.FreedObjs.Objects != 3 || rep.FreedGone != 0 || rep.Leaked.Objects != 0 {
		t.Fatalf("without --delete-freed: %+v", rep)
	}
	rep = e.run(gc.Options{Grace: time.Nanosecond, DeleteFreed: true, DryRun: true})
	if rep.FreedDel.Objects != 0 || rep.FreedGone != 0 {
		t.Fatalf("dry run deleted freed slices: %+v", rep)
	}
	rep = e.run(gc.Options{Grace: time.Nanosecond, DeleteFreed: true})
	if rep.FreedDel.Objects != 3 || rep.FreedGone != 1 {
		t.Fatalf("with --delete-freed: %+v", rep)
	}
	if freed, _ := e.eng.FreedSlices(e.ctx, 0, 0); len(freed) != 0 {
		t.Fatalf("freed list after gc: %v", freed)
	}
	rep = e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Objects.Objects != 2 || rep.Live.Objects != 2 || rep.Freed != 0 {
		t.Fatalf("after: %+v", rep)
	}
	e.readBack(kino, keep)
}

func TestOrphansCounted(t *testing.T) {
	e := newEnv(t)
	e.write("o", content(8, 100))
	if _, err := e.eng.Unlink(e.ctx, meta.RootIno, "o"); err != nil {
		t.Fatal(err)
	}
	rep := e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Orphans != 1 || rep.Live.Objects != 1 || rep.Deleted.Objects != 0 {
		t.Fatalf("orphan's data must stay live: %+v", rep)
	}
}

func TestDeleteFailuresReported(t *testing.T) {
	e := newEnv(t)
	f := object.WithFaults(e.store)
	e.store = f
	e.stray(900003, 0, 10)
	f.FailDeletes(2) // the clock probe, then the stray
	rep, err := gc.Run(e.ctx, e.eng, e.store, gc.Options{Grace: time.Nanosecond, BlockSize: blockSize})
	if err == nil || len(rep.Failures) != 1 || rep.Deleted.Objects != 0 {
		t.Fatalf("gc = %+v, %v; want one failed delete", rep, err)
	}
}

func TestDryRunLocalClockFallback(t *testing.T) {
	e := newEnv(t)
	f := object.WithFaults(e.store)
	f.FailPuts(1)
	rep, err := gc.Run(e.ctx, e.eng, f, gc.Options{DryRun: true, BlockSize: blockSize})
	if err != nil || rep.Clock != "local" {
		t.Fatalf("dry run with a read-only store = %+v, %v", rep, err)
	}
	f.FailPuts(1)
	if _, err := gc.Run(e.ctx, e.eng, f, gc.Options{BlockSize: blockSize}); err == nil {
		t.Fatal("a deleting run without the store's clock must fail")
	}
}

func TestNoScanner(t *testing.T) {
	e := newEnv(t)
	type plain struct{ meta.Engine }
	if _, err := gc.Run(e.ctx, plain{e.eng}, e.store, gc.Options{}); !errors.Is(err, gc.ErrNoScanner) {
		t.Fatalf("err = %v", err)
	}
}

func TestManyObjectsPaged(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 2500; i++ {
		e.stray(meta.SliceID(1_000_000+i), 0, 1)
	}
	prog := &gc.Progress{}
	rep := e.run(gc.Options{Grace: time.Nanosecond, Progress: prog})
	if rep.Deleted.Objects != 2500 || len(rep.LeakedKeys) != 20 {
		t.Fatalf("report: deleted %+v, %d sampled", rep.Deleted, len(rep.LeakedKeys))
	}
	if phase, _, _ := prog.Snapshot(); phase != "deleting" {
		t.Fatalf("last phase %q", phase)
	}
}

// TestRefusesForeignStore: a store holding none of the volume's objects is
// probably the wrong one; gc reports but deletes nothing there.
func TestRefusesForeignStore(t *testing.T) {
	e := newEnv(t)
	e.write("a", content(9, 100))
	other := newEnv(t)
	key := other.stray(900009, 0, 10)
	rep, err := gc.Run(e.ctx, e.eng, other.store, gc.Options{Grace: time.Nanosecond, BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Refused == "" || rep.Deleted.Objects != 0 || !other.exists(key) || rep.MissingN != 1 {
		t.Fatalf("report = %+v", rep)
	}
}

// TestFreedDuringGCIsNotDamage: a file deleted (and its objects cleaned)
// between the scan and the listing is not reported missing.
func TestFreedDuringGCIsNotDamage(t *testing.T) {
	e := newEnv(t)
	e.write("keep", content(10, 10))
	ino := e.write("gone", content(11, blockSize+1))
	slices, _ := e.eng.ReadChunk(e.ctx, ino, 0)
	hook := &scanHook{Engine: e.eng, after: func() {
		r, err := e.eng.Unlink(e.ctx, meta.RootIno, "gone")
		if err == nil {
			err = e.eng.Purge(e.ctx, r.Ino)
		}
		if err == nil {
			err = e.data.DeleteSlice(e.ctx, slices[0].ID, slices[0].Size)
		}
		if err == nil {
			err = e.eng.ForgetFreed(e.ctx, []meta.SliceID{slices[0].ID})
		}
		if err != nil {
			t.Error(err)
		}
	}}
	rep, err := gc.Run(e.ctx, hook, e.store, gc.Options{DryRun: true, BlockSize: blockSize})
	if err != nil || rep.Damaged() || rep.Slices != 2 {
		t.Fatalf("gc = %+v, %v; want no damage", rep, err)
	}
}

// TestStaleTempRemoved: on a file store (under the checksum wrapper),
// gc removes temporary files a killed writer left once they are
// StaleTempAge old, keeps younger ones, and touches none in a dry run.
func TestStaleTempRemoved(t *testing.T) {
	e := newEnv(t)
	fsStore, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.store = object.WithChecksum(fsStore)
	dir := filepath.Join(fsStore.Root(), "chunks", "0", "0")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(dir, ".shoal-tmp-spare-1"), filepath.Join(dir, ".shoal-tmp-2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-gc.StaleTempAge - time.Minute)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if rep := e.run(gc.Options{DryRun: true}); rep.TempRemoved != 0 || !fileExists(stale) {
		t.Fatalf("dry run removed temporary files: %+v", rep)
	}
	rep := e.run(gc.Options{Grace: time.Minute})
	if rep.TempRemoved != 1 || fileExists(stale) || !fileExists(fresh) {
		t.Fatalf("removed %d; stale there %v, fresh there %v; want only the stale one removed", rep.TempRemoved, fileExists(stale), fileExists(fresh))
	}
	if rep := e.run(gc.Options{Grace: time.Nanosecond}); rep.TempRemoved != 1 || fileExists(fresh) {
		t.Fatalf("no grace: removed %d, fresh there %v", rep.TempRemoved, fileExists(fresh))
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
