package kvmeta

import (
	"bytes"
	"testing"

	"shoal/internal/meta"
)

// Fuzz targets for the decoders of stored engine records. Any value must
// decode to an error or to what its encoder would store as exactly those
// bytes: never a panic, never a record that means something else.
// scripts/test.sh runs each for a few seconds ("fuzz" step).

func FuzzDecodeAttr(f *testing.F) {
	a := meta.Attr{Type: meta.TypeFile, Mode: 0o644, Uid: 1, Gid: 2, Atime: 3, Mtime: 4, Ctime: 5,
		Nlink: 1, Length: 1 << 20, Alloc: 1 << 20, Parent: 1}
	f.Add(encodeAttrRecord(&a, 0, 0))
	f.Add(encodeAttrRecord(&a, flagXattrs, 7))
	f.Add(encodeAttrRecord(&a, 0, 0)[:attrLen])
	f.Add([]byte{attrVersion})
	// Found by fuzzing, refused since: a length no encoder wrote, type 0.
	f.Add(append(encodeAttrRecord(&a, 0, 0), 0))
	f.Add(encodeAttrRecord(&meta.Attr{Nlink: 1}, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeAttr(b)
		if err != nil {
			return
		}
		again := encodeAttrRecord(&got, attrFlags(b), attrGen(b))
		switch {
		case len(b) == attrLen:
			again = again[:attrLen] // a record from before Alloc was kept
		case len(b) == attrLen+16 && attrGen(b) == 0:
			again = append(again, make([]byte, 8)...) // generation 0 written out
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded %d bytes as %+v, which encodes as %d other bytes", len(b), got, len(again))
		}
	})
}

func FuzzDecodeDentry(f *testing.F) {
	f.Add(encodeDentry(42, meta.TypeDir))
	f.Add([]byte{1, 2, 3})
	f.Add(append(encodeDentry(42, meta.TypeDir), 0)) // found by fuzzing
	f.Add(encodeDentry(42, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		ino, typ, err := decodeDentry(b)
		if err == nil && !bytes.Equal(encodeDentry(ino, typ), b) {
			t.Fatalf("decoded %x as (%d, %d), which encodes differently", b, ino, typ)
		}
	})
}

// FuzzDecodeChunkValue decodes a chunk key and value, then resolves the
// slices over the chunk as a read would.
func FuzzDecodeChunkValue(f *testing.F) {
	ss := []meta.Slice{{ID: 7, Size: 100, Off: 0, Len: 100, Pos: 0}, {ID: 8, Size: 50, Off: 10, Len: 20, Pos: 30}}
	f.Add(chunkKey(5, 1), encodeSlices(ss))
	f.Add(appendedKey(5, 1, 3), encodeSlices(ss[:1]))
	f.Add([]byte{kindChunk}, []byte{})
	// Found by fuzzing: ranges past the slice's data or the chunk's end.
	f.Add(chunkKey(5, 1), encodeSlices([]meta.Slice{{ID: 9, Size: 10, Off: 5, Len: 10}}))
	f.Add(chunkKey(5, 1), encodeSlices([]meta.Slice{{ID: 9, Size: 100, Len: 100, Pos: meta.ChunkSize - 50}}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, err := decodeChunkValue(key, value)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeSlices(got), value) {
			t.Fatalf("decoded %x as %+v, which encodes differently", value, got)
		}
		for _, p := range meta.Resolve(got, 0, meta.ChunkSize) {
			if p.ID != 0 && uint64(p.Off)+uint64(p.Len) > uint64(p.Size) || uint64(p.Pos)+uint64(p.Len) > meta.ChunkSize {
				t.Fatalf("resolved %+v out of its slice or chunk", p)
			}
		}
	})
}

func FuzzDecodeQuota(f *testing.F) {
	f.Add(encodeQuota(meta.Quota{MaxSpace: 1 << 30, MaxInodes: 10, UsedSpace: 5, UsedInodes: 1}))
	f.Add([]byte{1})
	f.Add(append(encodeQuota(meta.Quota{MaxSpace: 1}), 7)) // found by fuzzing
	f.Fuzz(func(t *testing.T, b []byte) {
		q, ok := decodeQuota(3, b)
		if ok && !bytes.Equal(encodeQuota(q), b) {
			t.Fatalf("decoded %x as %+v, which encodes differently", b, q)
		}
	})
}

func FuzzDecodeOrphan(f *testing.F) {
	f.Add(orphanValue(4, 1234))
	f.Add(encodeInt(99)) // an orphan mark from before sessions were kept
	f.Fuzz(func(t *testing.T, b []byte) {
		id, at := decodeOrphan(b)
		switch len(b) {
		case 16:
			if !bytes.Equal(orphanValue(id, at), b) {
				t.Fatalf("decoded %x as (%d, %d)", b, id, at)
			}
		case 8:
			if id != 0 || at != decodeInt(b) {
				t.Fatalf("decoded old mark %x as (%d, %d)", b, id, at)
			}
		}
	})
}
