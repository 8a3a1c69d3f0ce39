package object_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

// The stored layout of checksummed objects is an on-disk format: volumes
// outlive the binary that wrote them. These tests pin version 1 byte for
// byte, independently of the wrapper's constants, so a change of the
// layout (segment size, trailer, header) fails here instead of in a mount.
//
// This happened once: the segment size went from 64 KiB to 16 KiB with the
// version left at 1, and a volume written by the older build, remounted by
// the newer one, read as "segment 0: checksum mismatch: corrupt object" on
// every block. If you change the layout, bump the version and keep reading
// version 1; do not edit these expectations.

// v1Segment is the data bytes per record of layout version 1. Never change.
const v1Segment = 16384

// v1Encode is a reference encoder of layout version 1, written from
// docs/format.md rather than from the wrapper's code.
func v1Encode(data []byte) []byte {
	c := crc32.MakeTable(crc32.Castagnoli)
	n := uint64(len(data))
	out := []byte("SHCK")
	out = append(out, 1, 0, 0, 0)
	out = binary.LittleEndian.AppendUint64(out, n)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out[:16], c))
	for i := 0; i*v1Segment < len(data); i++ {
		seg := data[i*v1Segment : min(len(data), (i+1)*v1Segment)]
		pre := binary.LittleEndian.AppendUint32(nil, uint32(i))
		pre = binary.LittleEndian.AppendUint64(pre, n)
		out = append(out, seg...)
		out = binary.LittleEndian.AppendUint64(out, n)
		out = binary.LittleEndian.AppendUint32(out, crc32.Update(crc32.Checksum(pre, c), c, seg))
	}
	return out
}

// TestChecksumLayoutV1Golden pins one small object's stored bytes.
func TestChecksumLayoutV1Golden(t *testing.T) {
	const golden = "5348434b0100000005000000000000000722c38c" + // header: magic, v1, L=5, CRC
		"73686f616c" + // "shoal"
		"0500000000000000" + "ee9c639d" // trailer: L=5, CRC32C(0, 5, "shoal")
	want, err := hex.DecodeString(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := v1Encode([]byte("shoal")); !bytes.Equal(got, want) {
		t.Fatalf("reference encoder drifted:\n got %x\nwant %x", got, want)
	}
	s, raw := newChecked(t)
	mustPut(t, s, "k", []byte("shoal"))
	if got := rawBytes(t, raw, "k"); !bytes.Equal(got, want) {
		t.Fatalf("stored layout changed (bump the version):\n got %x\nwant %x", got, want)
	}
}

// TestChecksumLayoutV1 checks that the wrapper writes exactly the reference
// encoding, and reads it back whole and ranged, at the sizes around segment
// boundaries and for a full 4 MiB block.
func TestChecksumLayoutV1(t *testing.T) {
	sizes := []int{0, 1, v1Segment - 1, v1Segment, v1Segment + 1, 3*v1Segment + 777, 393907, 4 << 20}
	for _, n := range sizes {
		data := randData(uint64(n), n)
		ref := v1Encode(data)
		s, raw := newChecked(t)
		mustPut(t, s, "w", data)
		if got := rawBytes(t, raw, "w"); !bytes.Equal(got, ref) {
			t.Fatalf("%d bytes: stored layout differs from version 1 at byte %d (bump the version)",
				n, firstDiff(got, ref))
		}
		ms := memstore.New()
		if err := ms.Put(context.Background(), "r", bytes.NewReader(ref), int64(len(ref))); err != nil {
			t.Fatal(err)
		}
		cs := object.WithChecksum(ms)
		for _, r := range [][2]int64{{0, -1}, {198, 8192}, {int64(n) / 2, 4096}, {int64(max(n-5, 0)), -1}} {
			got, err := read(cs, "r", r[0], r[1])
			if err != nil || !bytes.Equal(got, want(data, r[0], r[1])) {
				t.Fatalf("%d bytes: Get(%d, %d) of a version 1 object: %d bytes, %v", n, r[0], r[1], len(got), err)
			}
		}
	}
}

// firstDiff returns the first index where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
