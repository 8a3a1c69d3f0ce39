package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// IozoneTests lists the iozone-style tests in the order they run. "write"
// always runs first: it creates the files the others use.
var IozoneTests = []string{
	"write", "rewrite", "read", "re-read", "reverse read", "stride read",
	"random read", "mixed", "random write", "pwrite", "pread",
}

// IozoneAutoTests are the tests run by default in automatic mode (iozone -a
// runs tests 0, 1 and 2: write/rewrite, read/re-read, random read/write).
var IozoneAutoTests = []string{"write", "rewrite", "read", "re-read", "random read", "random write"}

// IozoneStride is the stride, in records, of the stride-read test.
const IozoneStride = 17

// Iozone is the iozone-style throughput workload: Workers files of FileSize
// bytes per client, accessed in records of Record bytes (iozone -l N -u N
// -r REC -s SIZE), or, in automatic mode, one file per client for every
// file size and record size in range (iozone -a -g MAX).
type Iozone struct {
	Workers      int
	FileSize     int64
	Record       int
	Tests        []string // subset of IozoneTests; empty means all
	IncludeClose bool     // time close() too (iozone -c)
	Fsync        bool     // fsync before close, timed (iozone -e)
	Auto         bool
	AutoMinFile  int64 // smallest file in automatic mode (iozone: 64 KiB)
	AutoMaxFile  int64 // largest file in automatic mode (iozone -g)
	AutoMinRec   int   // smallest record in automatic mode (4 KiB)
	AutoMaxRec   int   // largest record in automatic mode (16 MiB)
	Seed         uint64
}

var _ Workload = (*Iozone)(nil)

// Name implements Workload.
func (w *Iozone) Name() string { return "iozone" }

// Params implements Workload.
func (w *Iozone) Params() []Param {
	ps := []Param{
		{"tests", strings.Join(w.tests(), ", ")},
		{"include close", fmt.Sprint(w.IncludeClose)},
		{"fsync", fmt.Sprint(w.Fsync)},
	}
	if w.Auto {
		return append(ps, Param{"mode", "automatic"},
			Param{"file sizes", Size(w.AutoMinFile) + " – " + Size(w.AutoMaxFile)},
			Param{"record sizes", Size(int64(w.AutoMinRec)) + " – " + Size(int64(w.AutoMaxRec))})
	}
	return append(ps, Param{"workers", fmt.Sprint(w.Workers)},
		Param{"file size", Size(w.FileSize)}, Param{"record size", Size(int64(w.Record))})
}

// tests returns the tests to run, in canonical order, write always first.
func (w *Iozone) tests() []string {
	want := w.Tests
	if len(want) == 0 {
		want = IozoneTests
		if w.Auto {
			want = IozoneAutoTests
		}
	}
	out := []string{"write"}
	for _, t := range IozoneTests[1:] {
		for _, x := range want {
			if x == t {
				out = append(out, t)
			}
		}
	}
	return out
}

// CheckTests reports an unknown test name in tests.
func CheckTests(tests []string) error {
	for _, x := range tests {
		found := false
		for _, t := range IozoneTests {
			found = found || t == x
		}
		if !found {
			return fmt.Errorf("unknown iozone test %q (known: %s)", x, strings.Join(IozoneTests, ", "))
		}
	}
	return nil
}

// Metrics implements Workload: MiB/s per phase.
func (w *Iozone) Metrics(ms []Measure) []Metric { return PerPhase(ms) }

// Run implements Workload.
func (w *Iozone) Run(c *Client) {
	if !w.Auto {
		w.runSet(c, "", max(w.Workers, 1), w.FileSize, w.Record, 0)
		return
	}
	set := 0
	for _, fr := range w.autoGrid() {
		suffix := fmt.Sprintf(" %s/%s", Size(fr[0]), Size(fr[1]))
		w.runSet(c, suffix, 1, fr[0], int(fr[1]), set)
		set++
	}
}

// autoGrid lists (file size, record size) pairs of automatic mode. Like
// iozone, records below 64 KiB are skipped for files above 32 MiB.
func (w *Iozone) autoGrid() [][2]int64 {
	var out [][2]int64
	for f := max(w.AutoMinFile, 4096); f <= w.AutoMaxFile; f *= 2 {
		for r := int64(max(w.AutoMinRec, 512)); r <= int64(w.AutoMaxRec) && r <= f; r *= 2 {
			if f > 32<<20 && r < 64<<10 {
				continue
			}
			out = append(out, [2]int64{f, r})
		}
	}
	return out
}

// ioFile is one worker's file and the generation of data it holds.
type ioFile struct {
	path string
	key  func(gen int) uint64
	gen  int
}

// runSet runs the chosen tests once over workers files of size bytes.
func (w *Iozone) runSet(c *Client, suffix string, workers int, size int64, rec int, set int) {
	files := make([]*ioFile, workers)
	for i := range files {
		i := i
		files[i] = &ioFile{
			path: filepath.Join(c.Dir, fmt.Sprintf("iozone.%d.%d", set, i)),
			key:  func(gen int) uint64 { return c.Key(set*1024+i, gen) },
		}
	}
	rng := rand.New(rand.NewPCG(w.Seed, uint64(c.Index)<<32|uint64(set)))
	for _, t := range w.tests() {
		p := Phase{Name: t + suffix, Unit: UnitMiBps, Cold: t == "read", Total: size * int64(workers)}
		c.Phase(p, func(m *Meter) error { return w.parallel(c, m, files, t, size, rec, rng) })
	}
	for _, f := range files {
		os.Remove(f.path)
		os.Remove(f.path + ".p")
	}
}

// parallel runs test t on every file at once, one goroutine per file.
func (w *Iozone) parallel(c *Client, m *Meter, files []*ioFile, t string, size int64, rec int, rng *rand.Rand) error {
	orders := make([][]int64, len(files))
	for i := range files {
		orders[i] = w.order(t, records(size, rec), rng)
	}
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.test(c, m, f, t, size, rec, orders[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// order returns the record order of test t over n records.
func (w *Iozone) order(t string, n int64, rng *rand.Rand) []int64 {
	switch t {
	case "reverse read":
		return reverseOrder(n)
	case "stride read":
		return strideOrder(n, IozoneStride)
	case "random read", "random write", "mixed":
		return randomOrder(n, rng)
	}
	return nil
}

// test runs test t on one file.
func (w *Iozone) test(c *Client, m *Meter, f *ioFile, t string, size int64, rec int, order []int64) error {
	p := pass{rec: rec, order: order, fsync: w.Fsync, timeClose: w.IncludeClose}
	path := f.path
	switch t {
	case "write":
		f.gen = 0
		p.access, p.create = seqWrite, true
	case "rewrite":
		f.gen++
		p.access = seqWrite
	case "read", "re-read":
		p.access = seqRead
	case "reverse read", "stride read", "random read":
		p.access = orderRead
	case "mixed":
		p.access = orderMixed
	case "random write":
		f.gen++
		p.access = orderWrite
	case "pwrite":
		p.access, p.create, p.order = orderWrite, true, seqOrder(records(size, rec))
		path = f.path + ".p"
	case "pread":
		p.access, p.order = orderRead, seqOrder(records(size, rec))
		path = f.path + ".p"
	}
	p.key = f.key(f.gen)
	if t == "pwrite" || t == "pread" {
		p.key = f.key(255)
	}
	return p.run(c, m, path, size)
}

// seqOrder returns 0, 1, ..., n-1.
func seqOrder(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}
