package data

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object/filestore"
)

// emptyObjects lists the empty files under root but the store's
// temporary ones: prepared block names.
func emptyObjects(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".shoal-tmp-") {
			if fi, err := d.Info(); err == nil && fi.Size() == 0 {
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// TestNamedPacks checks that a Store given Config.NewID has the file
// store prepare block names ahead once two small packs of one class came
// within namedMaxAge, that later packs of that size are stored under those names
// (their ids come from the pool, not from the writer's IDFunc), that the
// commit still follows the Put, and that Close removes the names no pack
// took.
func TestNamedPacks(t *testing.T) {
	root, log, e, s, w, writerIDs := namedFixture(t)
	var m model
	for i := 0; i < 2; i++ {
		p := pattern(byte(i), 0, 1000)
		m.write(uint64(i*1000), p)
		writeAll(t, w, uint64(i*1000), p)
		flush(t, w)
	}
	for deadline := time.Now().Add(10 * time.Second); s.named.held() < namedCount && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := len(emptyObjects(t, root)); n != namedCount {
		t.Fatalf("%d prepared names (%v), want %d", n, emptyObjects(t, root), namedCount)
	}
	before := len(*writerIDs)
	for i := 2; i < 6; i++ {
		p := pattern(byte(i), 0, 1000)
		m.write(uint64(i*1000), p)
		writeAll(t, w, uint64(i*1000), p)
		flush(t, w)
	}
	if len(*writerIDs) != before {
		t.Errorf("packs of the prepared size asked the writer for %d ids", len(*writerIDs)-before)
	}
	if n := len(emptyObjects(t, root)); n != namedCount-4 {
		t.Errorf("%d prepared names left after 4 packs, want %d", n, namedCount-4)
	}
	put := map[string]int{}
	for i, ev := range log.snapshot() {
		var id meta.SliceID
		var size uint32
		if key, ok := strings.CutPrefix(ev, "put "); ok {
			put[key] = i
		} else if _, err := fmt.Sscanf(ev, "commit %d %d", &id, &size); err == nil {
			if at, ok := put[BlockKey(id, 0, int(size))]; !ok || at > i {
				t.Fatalf("commit of slice %d at event %d before its put", id, i)
			}
		}
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left := emptyObjects(t, root); len(left) != 0 {
		t.Errorf("prepared names left after Close: %v", left)
	}
}

// TestNamedClasses checks that packs of different sizes take prepared
// names: each pack's object is padded up to its class (a multiple of
// namedStep), so packs of 1000 and 3000 bytes share the names prepared
// for 4096-byte objects and packs of 5000 and 7000 bytes those for
// 8192-byte ones, the writer is asked for no id once the classes are
// prepared, and the data reads back; a pack above namedMax is stored as
// it is, under a name of its own size.
func TestNamedClasses(t *testing.T) {
	_, log, e, s, w, writerIDs := namedFixture(t)
	var m model
	off := uint64(0)
	pack := func(n int) {
		t.Helper()
		p := pattern(byte(off), off, n)
		m.write(off, p)
		writeAll(t, w, off, p)
		flush(t, w)
		off += uint64(n)
	}
	settle := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); s.named.held() < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d names prepared, want %d", s.named.held(), want)
			}
		}
	}
	pack(1000)
	pack(3000)
	settle(namedCount)
	pack(5000)
	pack(7000)
	settle(2 * namedCount)
	before := len(*writerIDs)
	for _, n := range []int{1200, 2500, 4096, 4097, 6000, 8192} {
		pack(n)
	}
	if len(*writerIDs) != before {
		t.Errorf("packs of prepared classes asked the writer for %d ids", len(*writerIDs)-before)
	}
	pack(namedMax + 1000) // too large to take a prepared name
	sizes := map[int]int{}
	for _, ev := range log.snapshot() {
		if key, ok := strings.CutPrefix(ev, "put "); ok {
			if ref, ok := ParseBlockKey(key); ok {
				sizes[ref.Size]++
			}
		}
	}
	// The first two packs of a class prepare its names and are stored
	// as they are.
	want := map[int]int{1000: 1, 3000: 1, 5000: 1, 7000: 1, 4096: 3, 8192: 3, namedMax + 1000: 1}
	if fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("objects put by size: %v, want %v", sizes, want)
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

// namedFixture is a Store over a file store in a fresh directory (root)
// whose puts and the engine's commits are logged, given Config.NewID, and
// a Writer of inode 1 whose own IDFunc records the ids it hands out
// (packs that took a prepared name ask it for none).
func namedFixture(t *testing.T) (root string, log *trace, e *engine, s *Store, w *Writer, writerIDs *[]meta.SliceID) {
	t.Helper()
	root = t.TempDir()
	fs, err := filestore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	log = &trace{}
	e = newEngine(log)
	s = newTestStore(t, &recordStore{Store: fs, log: log}, Config{BlockSize: 1 << 20, NewID: e.newID})
	writerIDs = new([]meta.SliceID)
	w = s.NewWriter(1, func(ctx context.Context) (meta.SliceID, error) {
		id, err := e.newID(ctx)
		*writerIDs = append(*writerIDs, id)
		return id, err
	}, e.committer(1))
	return root, log, e, s, w, writerIDs
}
