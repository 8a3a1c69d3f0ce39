package fsck_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"shoal/internal/data"
	"shoal/internal/fsck"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

const blockSize = 16 << 10

// env is a volume over memkv and memstore whose files are written by
// hand: blocks through the checksum wrapper, then the slice committed.
type env struct {
	t    *testing.T
	ctx  context.Context
	eng  *kvmeta.Engine
	raw  object.Store
	sums object.Store
}

func newEnv(t *testing.T) *env {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	f := meta.Format{Name: "fsck", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: blockSize}
	if err := eng.Format(ctx, f, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	raw := memstore.New()
	return &env{t: t, ctx: ctx, eng: eng, raw: raw, sums: object.WithChecksum(raw)}
}

// write creates parent/name holding n random bytes in one slice and
// returns its inode and block keys.
func (e *env) write(parent meta.Ino, name string, n int) (meta.Ino, []string) {
	e.t.Helper()
	ent, err := e.eng.Mknod(e.ctx, meta.MknodRequest{Parent: parent, Name: name, Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := e.eng.NewSliceID(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(id), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	var keys []string
	for i := 0; i*blockSize < n; i++ {
		part := b[i*blockSize : min(n, (i+1)*blockSize)]
		key := data.BlockKey(id, i, len(part))
		if err := e.sums.Put(e.ctx, key, bytes.NewReader(part), int64(len(part))); err != nil {
			e.t.Fatal(err)
		}
		keys = append(keys, key)
	}
	s := meta.Slice{ID: id, Size: uint32(n), Len: uint32(n)}
	if _, err := e.eng.WriteChunk(e.ctx, ent.Ino, 0, s); err != nil {
		e.t.Fatal(err)
	}
	return ent.Ino, keys
}

func (e *env) mkdir(name string) meta.Ino {
	ent, err := e.eng.Mknod(e.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeDir, Mode: 0o755, Exclusive: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return ent.Ino
}

// rawBytes returns an object's stored bytes.
func (e *env) rawBytes(key string) []byte {
	rc, err := e.raw.Get(e.ctx, key, 0, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) putRaw(key string, b []byte) {
	if err := e.raw.Put(e.ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) run(o fsck.Options) *fsck.Report {
	e.t.Helper()
	o.BlockSize = blockSize
	rep, err := fsck.Run(e.ctx, e.eng, e.raw, o)
	if err != nil {
		e.t.Fatalf("fsck: %v", err)
	}
	return rep
}

func TestCleanVolume(t *testing.T) {
	e := newEnv(t)
	d := e.mkdir("d")
	e.write(d, "a", 3*blockSize+100)
	e.write(meta.RootIno, "b", 10)
	rep := e.run(fsck.Options{VerifyData: true})
	if rep.Damage() || len(rep.Damaged) > 0 || len(rep.Meta.Problems) > 0 {
		t.Fatalf("clean volume reported damage: %+v", rep)
	}
	if rep.Blocks != 5 || rep.Read.Objects != 5 || rep.Read.Bytes != 3*blockSize+110 || rep.Slices != 2 {
		t.Errorf("counts: blocks %d read %+v slices %d", rep.Blocks, rep.Read, rep.Slices)
	}
}

// TestFindsEachDamage deletes, truncates and bit-flips one block each,
// adds a leaked object, and checks that fsck names each block and file,
// that leaks are not damage, and that the flip needs verification.
func TestFindsEachDamage(t *testing.T) {
	e := newEnv(t)
	d := e.mkdir("d")
	inoA, keysA := e.write(d, "a", 2*blockSize)
	inoB, keysB := e.write(d, "b", 2*blockSize)
	inoC, keysC := e.write(meta.RootIno, "c", blockSize+5)
	e.write(meta.RootIno, "ok", blockSize)
	if _, err := e.eng.Link(e.ctx, inoC, d, "c-link"); err != nil {
		t.Fatal(err)
	}
	if err := e.raw.Delete(e.ctx, keysA[1]); err != nil {
		t.Fatal(err)
	}
	e.putRaw(keysB[0], e.rawBytes(keysB[0])[:1000])
	flipped := e.rawBytes(keysC[0])
	flipped[5000] ^= 0x10
	e.putRaw(keysC[0], flipped)
	e.putRaw(data.BlockKey(999999, 0, 10), make([]byte, object.StoredSize(10)))
	e.putRaw(data.BlockKey(999998, 0, 4096), nil) // a block name made ahead

	rep := e.run(fsck.Options{VerifyData: true})
	want := map[string]string{keysA[1]: fsck.Missing, keysB[0]: fsck.WrongSize, keysC[0]: fsck.Corrupt}
	if len(rep.Damaged) != len(want) {
		t.Fatalf("damaged: %+v, want %v", rep.Damaged, want)
	}
	for _, b := range rep.Damaged {
		if want[b.Key] != b.Kind {
			t.Errorf("block %s: %s, want %q", b.Key, b.Kind, want[b.Key])
		}
	}
	files := map[meta.Ino]fsck.File{}
	for _, f := range rep.Files {
		files[f.Ino] = f
	}
	checkFile(t, files[inoA], []string{"/d/a"}, fsck.Range{Off: blockSize, Len: blockSize})
	checkFile(t, files[inoB], []string{"/d/b"}, fsck.Range{Off: 0, Len: blockSize})
	checkFile(t, files[inoC], []string{"/c", "/d/c-link"}, fsck.Range{Off: 0, Len: blockSize})
	if !rep.Damage() || rep.Leaked.Objects != 1 || rep.Prepared.Objects != 1 {
		t.Errorf("Damage %v, leaked %+v, prepared %+v", rep.Damage(), rep.Leaked, rep.Prepared)
	}

	quick := e.run(fsck.Options{})
	if len(quick.Damaged) != 2 || quick.Read.Objects != 0 {
		t.Errorf("without verification: %d damaged (want the missing and the short one), %d read", len(quick.Damaged), quick.Read.Objects)
	}
}

func checkFile(t *testing.T, f fsck.File, paths []string, r fsck.Range) {
	t.Helper()
	if len(f.Paths) != len(paths) {
		t.Errorf("inode %d: paths %v, want %v", f.Ino, f.Paths, paths)
		return
	}
	for i := range paths {
		if f.Paths[i] != paths[i] {
			t.Errorf("inode %d: paths %v, want %v", f.Ino, f.Paths, paths)
		}
	}
	if len(f.Ranges) != 1 || f.Ranges[0] != r {
		t.Errorf("inode %d: ranges %v, want [%v]", f.Ino, f.Ranges, r)
	}
}

// TestZeroDamaged repairs a missing block by punching its range: the
// file's other data stays, and a second check is clean.
func TestZeroDamaged(t *testing.T) {
	e := newEnv(t)
	ino, keys := e.write(meta.RootIno, "a", 3*blockSize)
	if err := e.raw.Delete(e.ctx, keys[1]); err != nil {
		t.Fatal(err)
	}
	plain := e.run(fsck.Options{Repair: true, VerifyData: true})
	if !plain.Damage() || len(plain.Files) != 1 || plain.Files[0].Zeroed {
		t.Fatalf("repair without --zero-damaged changed data or found nothing: %+v", plain)
	}
	rep := e.run(fsck.Options{Repair: true, ZeroDamaged: true, VerifyData: true})
	if rep.Damage() || len(rep.Files) != 1 || !rep.Files[0].Zeroed || len(rep.Repairs) == 0 {
		t.Fatalf("zero-damaged repair: %+v", rep)
	}
	ss, err := e.eng.ReadChunk(e.ctx, ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	vis := meta.Resolve(ss, 0, 3*blockSize)
	for _, p := range vis {
		inHole := p.Pos >= blockSize && p.Pos < 2*blockSize
		if inHole != (p.ID == 0) {
			t.Errorf("after zeroing, piece %v", p)
		}
	}
	if again := e.run(fsck.Options{VerifyData: true}); again.Damage() || len(again.Files) > 0 || (len(again.Damaged) > 0 && !again.Damaged[0].Shadowed) {
		t.Errorf("after repair: %+v", again)
	}
}
