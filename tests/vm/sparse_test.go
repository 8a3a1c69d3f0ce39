package vm

import (
	"slices"
	"testing"
)

// TestPreallocation: qemu-img's preallocation=falloc (fallocate(2)) and
// =full on the mount give images of the full size that read as zeros and,
// for qcow2, check clean.
func TestPreallocation(t *testing.T) {
	_, m := mountOne(t)
	for _, c := range []struct{ format, prealloc string }{
		{"raw", "falloc"}, {"raw", "full"}, {"qcow2", "falloc"}, {"qcow2", "metadata"},
	} {
		t.Run(c.format+"/"+c.prealloc, func(t *testing.T) {
			image := m.Path("pre-" + c.prealloc + "." + c.format)
			mustQemu(t, "qemu-img", "create", "-f", c.format, "-o", "preallocation="+c.prealloc, image, "64M")
			qemuIO(t, c.format, cacheNone, image, "read -P 0 0 64M", "write -P 0x42 8M 1M")
			qemuIO(t, c.format, cacheNone, image, "read -P 0x42 8M 1M", "read -P 0 9M 55M")
			checkImage(t, c.format, image)
		})
	}
}

// TestDiscard: qemu-io discard on a raw image punches a hole: the range
// reads as zeros, SEEK_DATA/SEEK_HOLE and qemu-img map show the hole, and
// the data around it is intact.
func TestDiscard(t *testing.T) {
	_, m := mountOne(t)
	const mib = 1 << 20
	image := m.Path("discard.raw")
	mustQemu(t, "qemu-img", "create", "-f", "raw", image, "64M")
	qemuIO(t, "raw", cacheNone, image, "write -P 0xab 1M 8M")
	qemuIO(t, "raw", cacheNone, image, "discard 3M 4M")
	qemuIO(t, "raw", cacheNone, image, "read -P 0xab 1M 2M", "read -P 0 3M 4M", "read -P 0xab 7M 2M")
	want := []extent{{1 * mib, 2 * mib}, {7 * mib, 2 * mib}}
	if got := withoutFirstBlock(seekExtents(t, image)); !slices.Equal(got, want) {
		t.Errorf("SEEK_DATA/SEEK_HOLE after discard = %v, want %v", got, want)
	}
	if got := withoutFirstBlock(mapExtents(t, "raw", image)); !slices.Equal(got, want) {
		t.Errorf("qemu-img map after discard = %v, want %v", got, want)
	}
}

// TestDuCountsAllocated: st_blocks (what du and qemu-img info's "disk
// size" show) counts the data written, not the apparent size, and drops
// when a range is discarded.
func TestDuCountsAllocated(t *testing.T) {
	_, m := mountOne(t)
	image := m.Path("sparse.raw")
	mustQemu(t, "qemu-img", "create", "-f", "raw", image, "20G")
	steps := []struct {
		cmd  string
		want int64 // bytes of data, besides the first 4 KiB qemu-img writes
	}{
		{"write -P 1 1G 4M", 4 << 20},
		{"write -P 2 1G 1M", 4 << 20}, // an overwrite allocates nothing
		{"write -P 3 15G 64k", 4<<20 + 64<<10},
		{"discard 1G 2M", 2<<20 + 64<<10},
	}
	for _, s := range steps {
		qemuIO(t, "raw", cacheNone, image, s.cmd)
		if got := allocated(t, image) - 4096; got != s.want {
			t.Errorf("after %q: st_blocks*512 = %d (+4 KiB), want %d", s.cmd, got, s.want)
		}
	}
}
