package vm

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// alignedBuf returns n bytes aligned to 4 KiB, as O_DIRECT needs.
func alignedBuf(n int) []byte {
	const align = 4096
	b := make([]byte, n+align)
	skip := (align - int(uintptr(unsafe.Pointer(&b[0]))%align)) % align
	return b[skip : skip+n : skip+n]
}

func readAt(t *testing.T, f *os.File, buf []byte, off int64) {
	t.Helper()
	n, err := f.ReadAt(buf, off)
	if err != nil || n != len(buf) {
		t.Fatalf("O_DIRECT read %d at %d: n=%d, %v", len(buf), off, n, err)
	}
}

func writeAt(t *testing.T, f *os.File, buf []byte, off int64) {
	t.Helper()
	n, err := f.WriteAt(buf, off)
	if err != nil || n != len(buf) {
		t.Fatalf("O_DIRECT write %d at %d: n=%d, %v", len(buf), off, n, err)
	}
}

// TestRandomDirectIO writes and reads random aligned ranges of an image
// through O_DIRECT descriptors on two mounts, checking every read against
// an in-memory model of the image. Writes go through mount A; reads
// alternate between A (which sees its own writes at once) and B (which
// sees them after A's fsync, so B reads only after one). SHOAL_VM_OPS
// sets the number of operations, SHOAL_SEED the seed.
func TestRandomDirectIO(t *testing.T) {
	_, a, b := mountTwo(t)
	const size = 256 << 20
	ops := envInt("SHOAL_VM_OPS", 1500)
	seed := uint64(envInt("SHOAL_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d, %d operations (SHOAL_SEED, SHOAL_VM_OPS)", seed, ops)
	r := rand.New(rand.NewPCG(seed, 6))
	model := make([]byte, size)
	createSparse(t, a.Path("rand.img"), size)
	fa := openRW(t, a.Path("rand.img"))
	fb := openRW(t, b.Path("rand.img"))
	buf := alignedBuf(1 << 20)
	synced := true
	for i := range ops {
		n := (1 + r.IntN(64)) * 4096
		if r.IntN(8) == 0 {
			n = 4096
		}
		off := int64(r.IntN((size-n)/4096)) * 4096
		p := buf[:n]
		switch op := r.IntN(10); {
		case op < 5:
			fillRandom(r, p)
			writeAt(t, fa, p, off)
			copy(model[off:], p)
			synced = false
		case op < 6:
			if err := fa.Sync(); err != nil {
				t.Fatal(err)
			}
			synced = true
		default:
			f, where := fa, "A"
			if synced && op >= 8 {
				f, where = fb, "B"
			}
			readAt(t, f, p, off)
			if !bytes.Equal(p, model[off:off+int64(n)]) {
				t.Fatalf("op %d: read %d at %d through %s: %s (seed %d)", i, n, off, where, describe(p, model[off:off+int64(n)]), seed)
			}
		}
	}
}

// createSparse creates path with size bytes of holes.
func createSparse(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

func fillRandom(r *rand.Rand, p []byte) {
	for i := 0; i+8 <= len(p); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			p[i+j] = byte(v >> (8 * j))
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
