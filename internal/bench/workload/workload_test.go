package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"shoal/internal/bench/pattern"
)

// run runs w with n clients under root/c<i> and returns the measures.
func run(t *testing.T, w Workload, n int, root string, hooks Hooks) []Measure {
	t.Helper()
	g := NewGroup(n, hooks)
	pool := pattern.New(1, 1<<20)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("c%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c := g.NewClient(context.Background(), dir, i, pool)
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(c) }()
	}
	wg.Wait()
	return g.Measures()
}

// small returns every workload at test size.
func small() []Workload {
	return []Workload{
		&Iozone{Workers: 2, FileSize: 256 << 10, Record: 4096, Seed: 1},
		&Iozone{Auto: true, AutoMinFile: 64 << 10, AutoMaxFile: 128 << 10, AutoMinRec: 16 << 10, AutoMaxRec: 1 << 20, Seed: 1},
		&Bonnie{FileSize: 1 << 20, Chunk: 8192, Files: 50, FileMin: 0, FileMax: 3000, Dirs: 3, Seed: 1},
		&PostMark{SizeLow: 500, SizeHigh: 20000, Files: 40, Transactions: 100, ReadBlock: 4096, WriteBlock: 4096, ReadBias: 7, CreateBias: 3, Subdirs: 2, Seed: 1},
		&Mass{Files: 60, SizeLow: 1, SizeHigh: 9000, Seed: 1},
		&HugeDir{Entries: 300},
	}
}

func TestWorkloadsRunCleanAndCleanUp(t *testing.T) {
	for _, w := range small() {
		t.Run(w.Name(), func(t *testing.T) {
			root := t.TempDir()
			phases := 0
			ms := run(t, w, 2, root, Hooks{BeforePhase: func(Phase) bool { phases++; return false }})
			if len(ms) == 0 || phases != len(ms) {
				t.Fatalf("%d measures, BeforePhase ran %d times", len(ms), phases)
			}
			for _, m := range ms {
				if m.Err != nil {
					t.Errorf("phase %s: %v", m.Phase, m.Err)
				}
				if m.Elapsed <= 0 || m.Ops <= 0 {
					t.Errorf("phase %s: elapsed %v ops %d", m.Phase, m.Elapsed, m.Ops)
				}
			}
			for _, f := range w.Metrics(ms) {
				if f.Err != nil || f.Value <= 0 || f.Unit == "" {
					t.Errorf("figure %+v", f)
				}
			}
			for i := 0; i < 2; i++ {
				left, _ := os.ReadDir(filepath.Join(root, fmt.Sprintf("c%d", i)))
				if len(left) != 0 {
					t.Errorf("client %d left %d entries, e.g. %s", i, len(left), left[0].Name())
				}
			}
		})
	}
}

func TestIozoneMeasuresAllBytes(t *testing.T) {
	w := &Iozone{Workers: 3, FileSize: 100 << 10, Record: 4096, Seed: 1}
	ms := run(t, w, 2, t.TempDir(), Hooks{})
	if len(ms) != len(IozoneTests) {
		t.Fatalf("%d phases, want %d", len(ms), len(IozoneTests))
	}
	for _, m := range ms {
		if m.Bytes != 2*3*100<<10 {
			t.Errorf("%s: %d bytes, want %d", m.Phase, m.Bytes, 2*3*100<<10)
		}
	}
}

func TestIozoneSubsetAlwaysWritesFirst(t *testing.T) {
	w := &Iozone{Workers: 1, FileSize: 64 << 10, Record: 4096, Tests: []string{"random read", "read"}}
	var names []string
	for _, m := range run(t, w, 1, t.TempDir(), Hooks{}) {
		names = append(names, m.Phase)
	}
	if got := strings.Join(names, ","); got != "write,read,random read" {
		t.Errorf("phases %s", got)
	}
	if CheckTests([]string{"read", "bogus"}) == nil {
		t.Error("CheckTests accepted an unknown test")
	}
}

// corrupt flips one byte of path at off.
func corrupt(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Error(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Error(err)
	}
}

// TestWrongDataFails checks that every workload that reads data notices
// when the file system returns something else than was written.
func TestWrongDataFails(t *testing.T) {
	cases := []struct {
		w      Workload
		before string // phase before which to corrupt
		glob   string // files to corrupt, under root
		phase  string // phase that must fail
	}{
		{&Iozone{Workers: 2, FileSize: 64 << 10, Record: 4096}, "read", "c0/iozone.0.1", "read"},
		{&Iozone{Workers: 1, FileSize: 64 << 10, Record: 4096}, "pread", "c0/iozone.0.0.p", "pread"},
		{&Bonnie{FileSize: 256 << 10, Chunk: 8192, Files: 5}, "block read", "c0/bonnie.dat", "block read"},
		{&Mass{Files: 20, SizeLow: 100, SizeHigh: 200}, "read sized", "c0/sized/*", "read sized"},
		{&PostMark{SizeLow: 100, SizeHigh: 200, Files: 20, Transactions: 50, ReadBlock: 64, WriteBlock: 64, ReadBias: 10, CreateBias: 5}, "transactions", "c0/pm*", "transactions"},
	}
	for _, tc := range cases {
		t.Run(tc.w.Name()+"/"+tc.phase, func(t *testing.T) {
			root := t.TempDir()
			hook := func(p Phase) bool {
				if p.Name == tc.before {
					files, _ := filepath.Glob(filepath.Join(root, tc.glob))
					if len(files) == 0 {
						t.Errorf("no files match %s", tc.glob)
					}
					for _, f := range files {
						corrupt(t, f, 50)
					}
				}
				return false
			}
			ms := run(t, tc.w, 1, root, Hooks{BeforePhase: hook})
			for _, m := range ms {
				if m.Phase == tc.phase && !errors.Is(m.Err, pattern.ErrMismatch) {
					t.Errorf("phase %s: err %v, want a data mismatch", m.Phase, m.Err)
				}
			}
		})
	}
}

func TestHugeDirNoticesWrongListing(t *testing.T) {
	root := t.TempDir()
	hook := func(p Phase) bool {
		if p.Name == "readdir" {
			os.WriteFile(filepath.Join(root, "c0", "huge", "intruder"), nil, 0o644)
		}
		return false
	}
	ms := run(t, &HugeDir{Entries: 50}, 1, root, Hooks{BeforePhase: hook})
	if ms[1].Phase != "readdir" || ms[1].Err == nil || !strings.Contains(ms[1].Err.Error(), "intruder") {
		t.Fatalf("readdir measure %+v", ms[1])
	}
}

func TestErrorsAreRecordedAndLaterPhasesSkipped(t *testing.T) {
	root := t.TempDir()
	g := NewGroup(2, Hooks{})
	pool := pattern.New(1, 1<<16)
	w := &HugeDir{Entries: 10}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		dir := filepath.Join(root, fmt.Sprintf("c%d", i))
		if i == 0 {
			os.Mkdir(dir, 0o755)
		}
		c := g.NewClient(context.Background(), dir, i, pool) // c1's dir is missing
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(c) }()
	}
	wg.Wait()
	ms := g.Measures()
	if len(ms) != 4 {
		t.Fatalf("%d measures", len(ms))
	}
	for _, m := range ms {
		if !errors.Is(m.Err, syscall.ENOENT) || !strings.Contains(m.Err.Error(), "client 1") {
			t.Errorf("phase %s: %v", m.Phase, m.Err)
		}
	}
	if !strings.Contains(ms[2].Err.Error(), "skipped after create failed") {
		t.Errorf("stat phase error %v", ms[2].Err)
	}
	if m := PerPhase(ms); m[0].Err == nil || m[0].Value != 0 {
		t.Errorf("figure of a failed phase %+v", m[0])
	}
}

func TestFailSkipsEverything(t *testing.T) {
	g := NewGroup(1, Hooks{})
	c := g.NewClient(context.Background(), t.TempDir(), 0, pattern.New(1, 4096))
	c.Fail("setup", syscall.EACCES)
	(&Mass{Files: 3}).Run(c)
	for _, m := range g.Measures() {
		if !errors.Is(m.Err, syscall.EACCES) {
			t.Errorf("%s: %v", m.Phase, m.Err)
		}
	}
}

func TestCancelStopsPhases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := NewGroup(1, Hooks{})
	c := g.NewClient(ctx, t.TempDir(), 0, pattern.New(1, 4096))
	(&HugeDir{Entries: 5}).Run(c)
	for _, m := range g.Measures() {
		if !errors.Is(m.Err, context.Canceled) {
			t.Errorf("%s: %v", m.Phase, m.Err)
		}
	}
}
