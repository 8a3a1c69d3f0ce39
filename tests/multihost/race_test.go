package multihost

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestConcurrentCreates: every mount creates its own names in one shared
// directory at the same time, and all of them also race to create the same
// "common" names with O_EXCL. Afterwards every mount lists each name exactly
// once, none is missing, and each common name was won by exactly one
// creator.
func TestConcurrentCreates(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d-mounts", n), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				concurrentCreates(t, mountN(t, b.newVolume(t), n), 400/n, 50)
			})
		})
	}
}

func concurrentCreates(t *testing.T, ms []*testutil.Mount, perMount, common int) {
	if err := os.Mkdir(ms[0].Path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	wins := make([]int, len(ms))
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(ms)+50*len(ms))
	for i, m := range ms {
		wg.Add(2)
		go func() { defer wg.Done(); errs <- createOwn(m, i, perMount) }()
		go func() { defer wg.Done(); wins[i] = createCommon(m, common, errs) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	total := 0
	for _, w := range wins {
		total += w
	}
	if total != common {
		t.Errorf("O_EXCL creates of %d common names succeeded %d times in all (per mount %v)", common, total, wins)
	}
	want := map[string]bool{}
	for i := range ms {
		for k := range perMount {
			want[fmt.Sprintf("m%d-%04d", i, k)] = true
		}
	}
	for k := range common {
		want[fmt.Sprintf("common-%03d", k)] = true
	}
	for _, m := range ms {
		checkListing(t, m.Path("dir"), want)
	}
}

// createOwn creates names m{i}-NNNN in dir on mount m.
func createOwn(m *testutil.Mount, i, n int) error {
	for k := range n {
		p := m.Path("dir", fmt.Sprintf("m%d-%04d", i, k))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", p, err)
		}
	}
	return nil
}

// createCommon tries O_EXCL creates of the common names and counts the
// ones this mount won; EEXIST is the expected loss, anything else an error.
func createCommon(m *testutil.Mount, n int, errs chan<- error) int {
	won := 0
	for k := range n {
		p := m.Path("dir", fmt.Sprintf("common-%03d", k))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, syscall.EEXIST) {
			continue
		}
		if err != nil {
			errs <- fmt.Errorf("create %s: %w", p, err)
			continue
		}
		won++
		if err := f.Close(); err != nil {
			errs <- fmt.Errorf("close %s: %w", p, err)
		}
	}
	return won
}

// checkListing fails t unless dir lists every name in want exactly once
// and nothing else, and every listed name can be stat'ed.
func checkListing(t *testing.T, dir string, want map[string]bool) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := f.Readdirnames(-1) // unsorted, so duplicates survive
	f.Close()
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	seen := map[string]int{}
	var bad []string
	for _, n := range names {
		seen[n]++
		if seen[n] == 2 {
			bad = append(bad, "twice: "+n)
		}
		if !want[n] {
			bad = append(bad, "unexpected: "+n)
		}
	}
	for n := range want {
		if seen[n] == 0 {
			bad = append(bad, "missing: "+n)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%s: %d entries, want %d; %d problems, first: %q", dir, len(names), len(want), len(bad), bad[:min(len(bad), 10)])
	}
}

// TestRenameRaces: every mount moves the same files between directories
// at random at the same time (each rename names a source that may already
// have moved: ENOENT is the expected loss). Afterwards each file is in
// exactly one directory on every mount, with its own content, and every
// entry leads to an inode.
func TestRenameRaces(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d-mounts", n), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				renameRaces(t, mountN(t, b.newVolume(t), n), 12, 4, 300/n)
			})
		})
	}
}

func renameRaces(t *testing.T, ms []*testutil.Mount, files, dirs, opsPerMount int) {
	for d := range dirs {
		if err := os.Mkdir(ms[0].Path(fmt.Sprintf("d%d", d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f := range files {
		writeFile(t, ms[0].Path("d0", fmt.Sprintf("f%02d", f)), []byte(fmt.Sprintf("file %02d", f)), false)
	}
	var wg sync.WaitGroup
	moved := make([]int, len(ms))
	errs := make(chan error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := renameLoop(m, uint64(i), files, dirs, opsPerMount)
			moved[i] = n
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("successful renames per mount: %v", moved)
	time.Sleep(time.Second + entrySlack) // let every kernel's entry cache expire
	for _, m := range ms {
		checkPlacement(t, m, files, dirs)
	}
}

// renameLoop renames d{a}/fNN to d{b}/fNN at random; ENOENT (the file is
// not in d{a}) is expected. It returns the number that succeeded.
func renameLoop(m *testutil.Mount, seed uint64, files, dirs, ops int) (int, error) {
	r := rand.New(rand.NewPCG(seed, 7))
	ok := 0
	for range ops {
		name := fmt.Sprintf("f%02d", r.IntN(files))
		a := r.IntN(dirs)
		b := (a + 1 + r.IntN(dirs-1)) % dirs
		err := os.Rename(m.Path(fmt.Sprintf("d%d", a), name), m.Path(fmt.Sprintf("d%d", b), name))
		switch {
		case err == nil:
			ok++
		case errors.Is(err, syscall.ENOENT):
		default:
			return ok, fmt.Errorf("%s: rename %s d%d -> d%d: %w", m.Dir, name, a, b, err)
		}
	}
	return ok, nil
}

// checkPlacement fails t unless each file is in exactly one directory,
// with its content, and every directory entry can be opened.
func checkPlacement(t *testing.T, m *testutil.Mount, files, dirs int) {
	t.Helper()
	where := map[string][]int{}
	for d := range dirs {
		dir := m.Path(fmt.Sprintf("d%d", d))
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, e := range ents {
			where[e.Name()] = append(where[e.Name()], d)
			b, err := os.ReadFile(dir + "/" + e.Name())
			if err != nil {
				t.Errorf("%s/%s is listed but cannot be read: %v", dir, e.Name(), err)
			} else if want := fmt.Sprintf("file %s", e.Name()[1:]); string(b) != want {
				t.Errorf("%s/%s holds %q, want %q", dir, e.Name(), b, want)
			}
		}
	}
	for f := range files {
		name := fmt.Sprintf("f%02d", f)
		if len(where[name]) != 1 {
			t.Errorf("%s: %s is in directories %v, want exactly one", m.Dir, name, where[name])
		}
		delete(where, name)
	}
	for name, ds := range where {
		t.Errorf("%s: unexpected entry %s in directories %v", m.Dir, name, ds)
	}
}
