package multihost

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// entrySlack is how much later than the entry timeout a change may show on
// another mount: the kernel's cache expiry is checked on the next lookup,
// and these machines are shared and slow.
const entrySlack = 1500 * time.Millisecond

// TestCloseToOpen: four mounts take turns; each writes and closes a file,
// and the next mount's open, started after that close returned, sees the
// new data, size and mtime, even though it had read and stat'ed the old
// version a moment before (its kernel caches hold the old one).
func TestCloseToOpen(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 4)
		closeToOpenRounds(t, ms)
	})
}

// TestCloseToOpenStrict is TestCloseToOpen with --strict mounts.
func TestCloseToOpenStrict(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 2, "--strict")
		closeToOpenRounds(t, ms)
	})
}

func closeToOpenRounds(t *testing.T, ms []*testutil.Mount) {
	sizes := []int{100, 5<<20 + 123, 10, 300 << 10, 0, 70000}
	writeFile(t, ms[0].Path("shared"), []byte("v0"), false)
	for round, size := range sizes {
		w, r := ms[round%len(ms)], ms[(round+1)%len(ms)]
		// Warm the reader's caches with the current version.
		if _, err := os.ReadFile(r.Path("shared")); err != nil {
			t.Fatalf("round %d: warm read on %s: %v", round, r.Dir, err)
		}
		time.Sleep(20 * time.Millisecond) // make the new mtime differ
		data := randBytes(uint64(round+1), size)
		writeFile(t, w.Path("shared"), data, round%2 == 1)
		wst, err := os.Stat(w.Path("shared"))
		if err != nil {
			t.Fatal(err)
		}
		checkOpenSees(t, fmt.Sprintf("round %d (%s -> %s)", round, w.Dir, r.Dir), r.Path("shared"), data, wst)
	}
}

// checkOpenSees opens path and checks data, size and mtime against the
// writer's view.
func checkOpenSees(t *testing.T, what, path string, want []byte, wst os.FileInfo) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatalf("%s: fstat: %v", what, err)
	}
	if st.Size() != int64(len(want)) {
		t.Errorf("%s: size after open %d, want %d", what, st.Size(), len(want))
	}
	if !st.ModTime().Equal(wst.ModTime()) {
		t.Errorf("%s: mtime after open %v, writer has %v", what, st.ModTime(), wst.ModTime())
	}
	got := make([]byte, len(want)+1)
	n, _ := readFull(f, got)
	if n != len(want) || string(got[:n]) != string(want) {
		t.Errorf("%s: data after open: %s", what, diffSummary(got[:n], want))
	}
}

// readFull reads until buf is full or EOF.
func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			return n, err
		}
	}
	return n, nil
}

// TestDirChangesEntryTimeout: creates, renames, unlinks, mkdir and rmdir
// made on one mount show on another within the entry timeout (1 s by
// default), even when the other mount had just looked the names up.
func TestDirChangesEntryTimeout(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 2)
		dirChanges(t, ms[0], ms[1], time.Second+entrySlack)
	})
}

// TestDirChangesStrict: with --strict the other mount sees every change at
// once.
func TestDirChangesStrict(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 2, "--strict")
		dirChanges(t, ms[0], ms[1], 0)
	})
}

// dirChanges makes changes on a and checks that b sees each within limit
// (0: on the first look). b looks every name up before it changes, so its
// kernel has the old answer cached.
func dirChanges(t *testing.T, a, b *testutil.Mount, limit time.Duration) {
	if err := os.Mkdir(a.Path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() error
		seen   func() error
	}{
		{"create", func() error { return os.WriteFile(a.Path("d", "x"), []byte("x"), 0o644) },
			func() error { return exists(b.Path("d", "x")) }},
		{"readdir after create", func() error { return nil },
			func() error { return listIs(b.Path("d"), "x") }},
		{"rename", func() error { return os.Rename(a.Path("d", "x"), a.Path("d", "y")) },
			func() error { return all(gone(b.Path("d", "x")), exists(b.Path("d", "y")), listIs(b.Path("d"), "y")) }},
		{"unlink", func() error { return os.Remove(a.Path("d", "y")) },
			func() error { return all(gone(b.Path("d", "y")), listIs(b.Path("d"))) }},
		{"mkdir", func() error { return os.Mkdir(a.Path("d", "sub"), 0o755) },
			func() error { return exists(b.Path("d", "sub")) }},
		{"rmdir", func() error { return os.Remove(a.Path("d", "sub")) },
			func() error { return gone(b.Path("d", "sub")) }},
	}
	for _, s := range steps {
		_ = s.seen() // cache b's current answer (which is expected to be wrong)
		if err := s.change(); err != nil {
			t.Fatalf("%s on %s: %v", s.name, a.Dir, err)
		}
		took, err := eventually(limit, s.seen)
		if err != nil {
			t.Errorf("%s on %s: not seen on %s after %v: %v", s.name, a.Dir, b.Dir, took, err)
			continue
		}
		t.Logf("%s seen on the other mount after %v", s.name, took.Round(time.Millisecond))
	}
}

// listIs reports nil when directory dir holds exactly names.
func listIs(dir string, names ...string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		return fmt.Errorf("%s lists %q, want %q", dir, got, names)
	}
	return nil
}

// all returns the first non-nil error.
func all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
