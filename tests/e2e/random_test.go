package e2e

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// Knobs of the randomized data-integrity test.
const (
	randomFiles   = 5
	randomMaxSize = 12 << 20 // usual file size bound
	randomHoleMax = 80 << 20 // holes may reach past the 64 MiB chunk edge
	randomMaxIO   = 256 << 10
)

// randomRun is the state of one randomized run: open files on the mount
// and their expected contents.
type randomRun struct {
	t     *testing.T
	m     *testutil.Mount
	rng   *rand.Rand
	seed  uint64
	files []*os.File
	model [][]byte
	step  int
	trail []string // the last operations, printed on failure
	spent map[string]time.Duration
	count map[string]int
}

// TestRandomIntegrity runs random writes, reads, truncates, holes and
// copy_file_ranges over several files, checking every read against an
// in-memory model, then checks all files again after a remount.
// SHOAL_SEED picks the seed (default 1); SHOAL_RANDOM_OPS the op count.
func TestRandomIntegrity(t *testing.T) {
	seed := envUint("SHOAL_SEED", 1)
	ops := int(envUint("SHOAL_RANDOM_OPS", 100000))
	if testing.Short() {
		ops = min(ops, 10000)
	}
	m := mountFresh(t)
	r := &randomRun{t: t, m: m, seed: seed, rng: rand.New(rand.NewPCG(seed, 2)),
		spent: map[string]time.Duration{}, count: map[string]int{}}
	t.Logf("seed %d (SHOAL_SEED), %d ops", seed, ops)
	for i := 0; i < randomFiles; i++ {
		r.model = append(r.model, nil)
		r.files = append(r.files, r.open(i, os.O_CREATE|os.O_TRUNC))
	}
	for r.step = 0; r.step < ops && !t.Failed(); r.step++ {
		r.one()
	}
	r.closeAll()
	if t.Failed() {
		return
	}
	for _, k := range sortedKeys(r.spent) {
		t.Logf("%-8s %6d ops %8v total %8v each", k, r.count[k], r.spent[k].Round(time.Millisecond), (r.spent[k] / time.Duration(r.count[k])).Round(time.Microsecond))
	}
	r.verifyAll("after the run")
	r.m = r.m.Remount(t)
	r.verifyAll("after remount")
}

func envUint(name string, def uint64) uint64 {
	if s := os.Getenv(name); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return v
		}
	}
	return def
}

func (r *randomRun) open(i, flag int) *os.File {
	f, err := os.OpenFile(r.m.Path(fmt.Sprintf("r%d", i)), os.O_RDWR|flag, 0o644)
	if err != nil {
		r.fail("open file %d: %v", i, err)
	}
	return f
}

// fail stops the test with the seed, the step and the recent operations.
func (r *randomRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d step %d: %s\nlast operations:\n%s\n(rerun with SHOAL_SEED=%d)",
		r.seed, r.step, fmt.Sprintf(format, args...), joinLines(r.trail), r.seed)
}

func (r *randomRun) note(format string, args ...any) {
	if len(r.trail) == 20 {
		r.trail = r.trail[1:]
	}
	r.trail = append(r.trail, fmt.Sprintf("%d: ", r.step)+fmt.Sprintf(format, args...))
}

func joinLines(ss []string) string {
	var b bytes.Buffer
	for _, s := range ss {
		b.WriteString("  " + s + "\n")
	}
	return b.String()
}

// one performs one random operation and accounts its time by kind.
func (r *randomRun) one() {
	start := time.Now()
	kind := r.dispatch(r.rng.IntN(randomFiles), r.rng.IntN(100))
	r.spent[kind] += time.Since(start)
	r.count[kind]++
}

// dispatch runs the operation that the percentile p selects on file i.
func (r *randomRun) dispatch(i, p int) string {
	switch {
	case p < 36:
		r.write(i, r.offset(i), r.ioSize())
		return "write"
	case p < 72:
		r.read(i)
		return "read"
	case p < 78:
		r.truncate(i)
		return "truncate"
	case p < 80:
		r.write(i, r.rng.Int64N(randomHoleMax), 1+r.rng.IntN(8192))
		return "hole"
	case p < 87:
		r.copyRange(i, r.rng.IntN(randomFiles))
		return "copy"
	case p < 89:
		r.note("fsync %d", i)
		if err := r.files[i].Sync(); err != nil {
			r.fail("fsync %d: %v", i, err)
		}
		return "fsync"
	case p < 92:
		r.reopen(i)
		return "reopen"
	case p < 97:
		r.note("drop cache %d", i)
		if err := unix.Fadvise(int(r.files[i].Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			r.fail("fadvise %d: %v", i, err)
		}
		return "dropcache"
	}
	r.checkSize(i)
	return "stat"
}

// offset picks a write offset near or inside file i.
func (r *randomRun) offset(i int) int64 {
	n := int64(len(r.model[i]))
	if n == 0 || r.rng.IntN(10) == 0 {
		return r.rng.Int64N(n + 64<<10)
	}
	return r.rng.Int64N(n)
}

// ioSize is usually small, sometimes up to randomMaxIO.
func (r *randomRun) ioSize() int {
	if r.rng.IntN(8) == 0 {
		return 1 + r.rng.IntN(randomMaxIO)
	}
	return 1 + r.rng.IntN(8192)
}

func (r *randomRun) write(i int, off int64, n int) {
	if off+int64(n) > randomHoleMax {
		return
	}
	data := make([]byte, n)
	for k := range data {
		data[k] = byte(r.rng.Uint32())
	}
	r.note("write %d off %d len %d", i, off, n)
	if _, err := r.files[i].WriteAt(data, off); err != nil {
		r.fail("write %d at %d len %d: %v", i, off, n, err)
	}
	r.model[i] = patch(r.model[i], off, data)
}

func (r *randomRun) read(i int) {
	size := int64(len(r.model[i]))
	off := r.rng.Int64N(size + 1 + 4096)
	n := r.ioSize()
	r.note("read %d off %d len %d", i, off, n)
	buf := make([]byte, n)
	got, err := r.files[i].ReadAt(buf, off)
	if err != nil && err != io.EOF {
		r.fail("read %d at %d len %d: %v", i, off, n, err)
	}
	var want []byte
	if off < size {
		want = r.model[i][off:min(size, off+int64(n))]
	}
	if !bytes.Equal(buf[:got], want) {
		r.fail("read %d at %d len %d: %s", i, off, n, diffSummary(buf[:got], want))
	}
}

func (r *randomRun) truncate(i int) {
	size := int64(len(r.model[i]))
	var to int64
	switch r.rng.IntN(3) {
	case 0:
		to = r.rng.Int64N(size + 1)
	case 1:
		to = size + r.rng.Int64N(1<<20)
	default:
		to = r.rng.Int64N(randomMaxSize)
	}
	r.note("truncate %d to %d", i, to)
	if err := r.files[i].Truncate(to); err != nil {
		r.fail("truncate %d to %d: %v", i, to, err)
	}
	if to <= size {
		r.model[i] = r.model[i][:to:to]
	} else {
		r.model[i] = append(r.model[i], make([]byte, to-size)...)
	}
}

// copyRange copies a random range of file i into file j (j may equal i as
// long as the ranges do not overlap).
func (r *randomRun) copyRange(i, j int) {
	size := int64(len(r.model[i]))
	if size == 0 {
		return
	}
	from := r.rng.Int64N(size)
	n := 1 + r.rng.Int64N(min(size-from, 2<<20))
	to := r.rng.Int64N(int64(len(r.model[j])) + 4096)
	if to+n > randomHoleMax || (i == j && from < to+n && to < from+n) {
		return
	}
	r.note("copy_file_range %d off %d -> %d off %d len %d", i, from, j, to, n)
	done := int64(0)
	for done < n {
		roff, woff := from+done, to+done
		k, err := unix.CopyFileRange(int(r.files[i].Fd()), &roff, int(r.files[j].Fd()), &woff, int(n-done), 0)
		if err != nil {
			r.fail("copy_file_range: %v", err)
		}
		if k == 0 {
			r.fail("copy_file_range copied 0 of %d bytes inside the source", n-done)
		}
		done += int64(k)
	}
	r.model[j] = patch(r.model[j], to, append([]byte(nil), r.model[i][from:from+n]...))
}

func (r *randomRun) reopen(i int) {
	r.note("reopen %d", i)
	if err := r.files[i].Close(); err != nil {
		r.fail("close %d: %v", i, err)
	}
	r.files[i] = r.open(i, 0)
}

func (r *randomRun) checkSize(i int) {
	var st unix.Stat_t
	if err := unix.Stat(r.m.Path(fmt.Sprintf("r%d", i)), &st); err != nil {
		r.fail("stat %d: %v", i, err)
	}
	if st.Size != int64(len(r.model[i])) {
		r.fail("stat %d: size %d, want %d", i, st.Size, len(r.model[i]))
	}
}

func (r *randomRun) closeAll() {
	for i, f := range r.files {
		if err := f.Close(); err != nil && !r.t.Failed() {
			r.fail("close %d: %v", i, err)
		}
	}
}

func (r *randomRun) verifyAll(when string) {
	for i, want := range r.model {
		got, err := os.ReadFile(r.m.Path(fmt.Sprintf("r%d", i)))
		if err != nil {
			r.fail("%s: read file %d: %v", when, i, err)
		}
		if !bytes.Equal(got, want) {
			r.fail("%s: file %d: %s", when, i, diffSummary(got, want))
		}
	}
}
