package e2e

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// Knobs of the randomized data-integrity test.
const (
	randomWorkers = 3        // independent streams run at once, each on its own files
	randomFiles   = 2        // files per worker
	randomMaxSize = 12 << 20 // usual file size bound
	randomHoleMax = 80 << 20 // holes may reach past the 64 MiB chunk edge
	randomMaxIO   = 256 << 10
)

// randomRun is the state of one worker of a randomized run: its open files
// on the mount and their expected contents. A worker touches only its own
// files, so its sequence of operations, and the model, are deterministic
// given its seed whatever the other workers do.
type randomRun struct {
	m      *testutil.Mount
	worker int
	rng    *rand.Rand
	seed   uint64
	files  []*os.File
	model  [][]byte
	step   int
	trail  []string // the last operations, printed on failure
	err    error    // the first failure; the worker stops there
	spent  map[string]time.Duration
	count  map[string]int
}

// TestRandomIntegrity runs random writes, reads, truncates, holes and
// copy_file_ranges over several files, checking every read against an
// in-memory model, then checks all files again after a remount. The
// operations are split over a few workers running at once (each on its
// own files) to keep the runtime down. SHOAL_SEED picks the seed (default
// 1); SHOAL_RANDOM_OPS the total op count (default 100,000).
func TestRandomIntegrity(t *testing.T) {
	seed := envUint("SHOAL_SEED", 1)
	ops := int(envUint("SHOAL_RANDOM_OPS", 100000))
	if testing.Short() {
		ops = min(ops, 10000)
	}
	m := mountFresh(t)
	t.Logf("seed %d (SHOAL_SEED), %d ops over %d workers", seed, ops, randomWorkers)
	runs := make([]*randomRun, randomWorkers)
	var wg sync.WaitGroup
	for k := range runs {
		runs[k] = newRandomRun(m, k, seed)
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[k].run(ops / randomWorkers)
		}()
	}
	wg.Wait()
	if reportRandom(t, runs, true) {
		return
	}
	for _, r := range runs {
		r.verifyAll("after the run")
	}
	m = m.Remount(t)
	for _, r := range runs {
		r.m = m
		r.verifyAll("after remount")
	}
	reportRandom(t, runs, false)
}

func newRandomRun(m *testutil.Mount, worker int, seed uint64) *randomRun {
	return &randomRun{m: m, worker: worker, seed: seed,
		rng:   rand.New(rand.NewPCG(seed, uint64(worker)+2)),
		spent: map[string]time.Duration{}, count: map[string]int{}}
}

// run opens the worker's files and performs ops random operations, or
// fewer if one fails; it always closes the files.
func (r *randomRun) run(ops int) {
	defer r.closeAll()
	for i := 0; i < randomFiles; i++ {
		r.model = append(r.model, nil)
		f, err := r.open(i, os.O_CREATE|os.O_TRUNC)
		if err != nil {
			r.fail("open file %d: %v", i, err)
			return
		}
		r.files = append(r.files, f)
	}
	for r.step = 0; r.step < ops && r.err == nil; r.step++ {
		r.one()
	}
}

// reportRandom fails t with every worker's error and, if there was none
// and timings is set, logs the time spent per kind of operation. It reports
// whether any worker failed.
func reportRandom(t *testing.T, runs []*randomRun, timings bool) bool {
	t.Helper()
	failed := false
	for _, r := range runs {
		if r.err != nil {
			t.Error(r.err)
			failed = true
		}
	}
	if failed || !timings {
		return failed
	}
	spent, count := map[string]time.Duration{}, map[string]int{}
	for _, r := range runs {
		for k, d := range r.spent {
			spent[k] += d
			count[k] += r.count[k]
		}
	}
	for _, k := range sortedKeys(spent) {
		t.Logf("%-9s %6d ops %8v total %8v each", k, count[k], spent[k].Round(time.Millisecond), (spent[k] / time.Duration(count[k])).Round(time.Microsecond))
	}
	return false
}

func envUint(name string, def uint64) uint64 {
	if s := os.Getenv(name); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return v
		}
	}
	return def
}

// name is the path of the worker's file i.
func (r *randomRun) name(i int) string {
	return r.m.Path(fmt.Sprintf("w%d-r%d", r.worker, i))
}

func (r *randomRun) open(i, flag int) (*os.File, error) {
	return os.OpenFile(r.name(i), os.O_RDWR|flag, 0o644)
}

// fail records the first failure with the seed, worker, step and recent
// operations; the worker stops before its next operation.
func (r *randomRun) fail(format string, args ...any) {
	if r.err != nil {
		return
	}
	r.err = fmt.Errorf("seed %d worker %d step %d: %s\nlast operations of this worker:\n%s(rerun with SHOAL_SEED=%d)",
		r.seed, r.worker, r.step, fmt.Sprintf(format, args...), joinLines(r.trail), r.seed)
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
			return
		}
		if k == 0 {
			r.fail("copy_file_range copied 0 of %d bytes inside the source", n-done)
			return
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
	f, err := r.open(i, 0)
	if err != nil {
		r.fail("reopen %d: %v", i, err)
		return
	}
	r.files[i] = f
}

func (r *randomRun) checkSize(i int) {
	var st unix.Stat_t
	if err := unix.Stat(r.name(i), &st); err != nil {
		r.fail("stat %d: %v", i, err)
	}
	if st.Size != int64(len(r.model[i])) {
		r.fail("stat %d: size %d, want %d", i, st.Size, len(r.model[i]))
	}
}

func (r *randomRun) closeAll() {
	for i, f := range r.files {
		if err := f.Close(); err != nil {
			r.fail("close %d: %v", i, err)
		}
	}
}

func (r *randomRun) verifyAll(when string) {
	for i, want := range r.model {
		got, err := os.ReadFile(r.name(i))
		if err != nil {
			r.fail("%s: read file %d: %v", when, i, err)
		}
		if !bytes.Equal(got, want) {
			r.fail("%s: file %d: %s", when, i, diffSummary(got, want))
		}
	}
}
