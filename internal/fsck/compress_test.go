package fsck_test

import (
	"bytes"
	"strings"
	"testing"

	"shoal/internal/data"
	"shoal/internal/fsck"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// newCompressedEnv is newEnv with blocks stored as zstd frames.
func newCompressedEnv(t *testing.T) *env {
	e := newEnv(t)
	e.sums = object.WithChecksum(object.WithCompress(e.raw, object.CompressZstd))
	return e
}

// writeText creates name holding n bytes of text (compressible) in one
// slice and returns its block keys.
func (e *env) writeText(name string, n int) []string {
	e.t.Helper()
	ent, err := e.eng.Mknod(e.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := e.eng.NewSliceID(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	b := []byte(strings.Repeat("compressible text, block after block\n", n/37+1)[:n])
	var keys []string
	for i := 0; i*blockSize < n; i++ {
		part := b[i*blockSize : min(n, (i+1)*blockSize)]
		key := data.BlockKey(id, i, len(part))
		if err := e.sums.Put(e.ctx, key, bytes.NewReader(part), int64(len(part))); err != nil {
			e.t.Fatal(err)
		}
		keys = append(keys, key)
	}
	if _, err := e.eng.WriteChunk(e.ctx, ent.Ino, 0, meta.Slice{ID: id, Size: uint32(n), Len: uint32(n)}); err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// TestCompressedVolume checks a volume of zstd frames (compressed text,
// raw random data): clean when fsck knows the volume compresses; a frame
// that decodes to the wrong length, or a stored size no frame of the
// block can have, is damage.
func TestCompressedVolume(t *testing.T) {
	e := newCompressedEnv(t)
	text := e.writeText("text", 3*blockSize+100)
	_, random := e.write(meta.RootIno, "random", 2*blockSize)
	o := fsck.Options{VerifyData: true, SizeOK: object.FrameStoredSizeOK, Blocks: e.sums}
	if rep := e.run(o); rep.Damage() || len(rep.Damaged) > 0 {
		t.Fatalf("clean compressed volume: damaged %+v", rep.Damaged)
	}
	if rep := e.run(fsck.Options{VerifyData: true}); len(rep.Damaged) != len(text)+len(random) {
		t.Fatalf("fsck unaware of compression: %d damaged, want all %d blocks", len(rep.Damaged), len(text)+len(random))
	}
	// A valid frame of one byte less under text[0]'s key, and under
	// random[0] a stored object longer than its raw frame.
	short := []byte(strings.Repeat("compressible text, block after block\n", blockSize/37+1)[:blockSize-1])
	if err := e.sums.Put(e.ctx, text[0], bytes.NewReader(short), int64(len(short))); err != nil {
		t.Fatal(err)
	}
	long := make([]byte, object.StoredSize(blockSize)+100)
	if err := e.raw.Put(e.ctx, random[0], bytes.NewReader(long), int64(len(long))); err != nil {
		t.Fatal(err)
	}
	rep := e.run(o)
	if len(rep.Damaged) != 2 || rep.Damaged[0].Kind != fsck.WrongSize || rep.Damaged[1].Kind != fsck.WrongSize {
		t.Fatalf("damaged %+v, want the two blocks of the wrong size", rep.Damaged)
	}
}
