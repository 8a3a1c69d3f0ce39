package vm

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"shoal/internal/testutil"
)

// handoffRounds is how many times an image goes back and forth.
const handoffRounds = 3

// TestMigrationHandoff is the storage side of a live migration between
// two hosts sharing a volume: qemu-io on one mount writes a pattern and
// exits, qemu-io on the other mount reads exactly that (and every earlier
// round's data) and writes its own, back and forth. Each round's reader
// runs qemu-img info on the image just before the writer grows it.
func TestMigrationHandoff(t *testing.T) {
	_, a, b := mountTwo(t)
	for _, format := range []string{"qcow2", "raw"} {
		t.Run(format, func(t *testing.T) {
			handoff(t, format, a, b, handoffRounds)
		})
	}
}

// handoff creates an image on from, then alternates writer and reader
// between the two mounts for rounds rounds in each direction.
func handoff(t *testing.T, format string, from, to *testutil.Mount, rounds int) {
	t.Helper()
	name := "guest." + format
	mustQemu(t, "qemu-img", "create", "-f", format, from.Path(name), "2G")
	hosts := [2]*testutil.Mount{from, to}
	var reads []string
	for i := range 2 * rounds {
		w, r := hosts[i%2], hosts[(i+1)%2]
		off := int64(i)*(97<<20) + int64(i)*4096 // spread over chunks, unaligned to them
		pattern := 0x30 + i
		write := fmt.Sprintf("write -P 0x%x %d 1M", pattern, off)
		reads = append(reads, fmt.Sprintf("read -P 0x%x %d 1M", pattern, off))
		// The destination looks at the image first (its kernel then
		// caches the old size), as a host does before it takes over.
		mustQemu(t, "qemu-img", "info", "-f", format, r.Path(name))
		qemuIO(t, format, cacheNone, w.Path(name), write, "flush")
		qemuIO(t, format, cacheNone, r.Path(name), reads...)
	}
	checkImage(t, format, from.Path(name))
}

// TestDirectReadSeesOtherMount: a descriptor opened with O_DIRECT on
// mount B before mount A writes (as a migration's destination opens the
// image before the source stops) reads A's data once A has fsynced,
// without reopening: no stale cache between them.
func TestDirectReadSeesOtherMount(t *testing.T) {
	_, a, b := mountTwo(t)
	const size = 16 << 20
	if err := os.WriteFile(a.Path("disk.raw"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	fb := openRW(t, b.Path("disk.raw"))
	buf := alignedBuf(64 << 10)
	readAt(t, fb, buf, 4<<20) // B has read (and could cache) the old data
	fa := openRW(t, a.Path("disk.raw"))
	for round := range 3 {
		want := bytes.Repeat([]byte{byte(0x41 + round)}, len(buf))
		copy(buf, want)
		writeAt(t, fa, buf, 4<<20)
		if err := fa.Sync(); err != nil {
			t.Fatal(err)
		}
		clear(buf)
		readAt(t, fb, buf, 4<<20)
		if !bytes.Equal(buf, want) {
			t.Fatalf("round %d: O_DIRECT read through B after A's fsync: %s", round, describe(buf, want))
		}
	}
	// Growth: A extends the image; B's open descriptor reads the new end.
	copy(buf, bytes.Repeat([]byte{0x7e}, len(buf)))
	writeAt(t, fa, buf, size)
	if err := fa.Sync(); err != nil {
		t.Fatal(err)
	}
	clear(buf)
	readAt(t, fb, buf, size)
	if buf[0] != 0x7e || buf[len(buf)-1] != 0x7e {
		t.Fatalf("O_DIRECT read past B's open-time end after A grew the file: %s", describe(buf, bytes.Repeat([]byte{0x7e}, len(buf))))
	}
}

// describe says where got first differs from want.
func describe(got, want []byte) string {
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d is %#x, want %#x", i, got[i], want[i])
		}
	}
	return "equal"
}
