package vm

import (
	"bytes"
	"fmt"
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

// TestParallelDirectIO runs several writers at once on one image through
// O_DIRECT (the kernel lets direct writes to one file run in parallel:
// FOPEN_PARALLEL_DIRECT_WRITES), as a guest with a deep queue does. Each
// goroutine owns every workers-th 64 KiB stripe of the image, writes and
// reads random aligned pieces of its stripes through its own descriptor,
// and checks each read against its part of the model. After an fsync,
// mount B reads the whole image back.
func TestParallelDirectIO(t *testing.T) {
	_, a, b := mountTwo(t)
	const (
		size    = 64 << 20
		stripe  = 64 << 10
		workers = 6
	)
	ops := envInt("SHOAL_VM_OPS", 1500)
	seed := uint64(envInt("SHOAL_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d, %d operations per worker (SHOAL_SEED, SHOAL_VM_OPS)", seed, ops)
	model := make([]byte, size)
	createSparse(t, a.Path("par.img"), size)
	errs := make(chan error, workers)
	for w := range workers {
		f := openRW(t, a.Path("par.img"))
		go func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			buf := alignedBuf(stripe)
			for i := range ops {
				s := int64(w + workers*r.IntN(size/stripe/workers))
				n := (1 + r.IntN(stripe/4096)) * 4096
				off := s*stripe + int64(r.IntN((stripe-n)/4096+1))*4096
				p := buf[:n]
				if r.IntN(3) > 0 {
					fillRandom(r, p)
					if k, err := f.WriteAt(p, off); err != nil || k != n {
						errs <- fmt.Errorf("worker %d op %d: write %d at %d: n=%d, %v", w, i, n, off, k, err)
						return
					}
					copy(model[off:], p) // stripes are disjoint: no lock needed
					continue
				}
				if k, err := f.ReadAt(p, off); err != nil || k != n {
					errs <- fmt.Errorf("worker %d op %d: read %d at %d: n=%d, %v", w, i, n, off, k, err)
					return
				}
				if !bytes.Equal(p, model[off:off+int64(n)]) {
					errs <- fmt.Errorf("worker %d op %d: read %d at %d: %s (seed %d)", w, i, n, off, describe(p, model[off:off+int64(n)]), seed)
					return
				}
			}
			errs <- f.Sync()
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	fb := openRW(t, b.Path("par.img"))
	buf := alignedBuf(1 << 20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		readAt(t, fb, buf, off)
		if !bytes.Equal(buf, model[off:off+int64(len(buf))]) {
			t.Fatalf("mount B at %d: %s (seed %d)", off, describe(buf, model[off:off+int64(len(buf))]), seed)
		}
	}
}
