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
// store prepare block names ahead once small flushes of one size come in
// a row, that later packs of that size are stored under those names
// (their ids come from the pool, not from the writer's IDFunc), that the
// commit still follows the Put, and that Close removes the names no pack
// took.
func TestNamedPacks(t *testing.T) {
	root := t.TempDir()
	fs, err := filestore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	log := &trace{}
	e := newEngine(log)
	s := New(&recordStore{Store: fs, log: log}, Config{BlockSize: 1 << 20, NewID: e.newID, Logger: discardLogger()})
	t.Cleanup(func() { _ = s.Close() })
	var writerIDs []meta.SliceID
	w := s.NewWriter(1, func(ctx context.Context) (meta.SliceID, error) {
		id, err := e.newID(ctx)
		writerIDs = append(writerIDs, id)
		return id, err
	}, e.committer(1))
	var m model
	for i := 0; i < 2; i++ {
		p := pattern(byte(i), 0, 1000)
		m.write(uint64(i*1000), p)
		writeAll(t, w, uint64(i*1000), p)
		flush(t, w)
	}
	ready := func() int {
		s.named.mu.Lock()
		defer s.named.mu.Unlock()
		return len(s.named.ids)
	}
	for deadline := time.Now().Add(10 * time.Second); ready() < namedCount && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := len(emptyObjects(t, root)); n != namedCount {
		t.Fatalf("%d prepared names (%v), want %d", n, emptyObjects(t, root), namedCount)
	}
	before := len(writerIDs)
	for i := 2; i < 6; i++ {
		p := pattern(byte(i), 0, 1000)
		m.write(uint64(i*1000), p)
		writeAll(t, w, uint64(i*1000), p)
		flush(t, w)
	}
	if len(writerIDs) != before {
		t.Errorf("packs of the prepared size asked the writer for %d ids", len(writerIDs)-before)
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

// TestNamedSwitch checks that ids prepared for one pack size give way to
// another size only after namedSwitch packs of it in a row, so that mixed
// sizes do not drop and prepare names over and over, and never to packs
// above namedMax.
func TestNamedSwitch(t *testing.T) {
	fs, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(nil)
	s := newTestStore(t, fs, Config{BlockSize: 1 << 20, NewID: e.newID})
	w := s.NewWriter(1, e.newID, e.committer(1))
	pool := func() (int, int) {
		s.named.mu.Lock()
		defer s.named.mu.Unlock()
		return s.named.size, len(s.named.ids)
	}
	settle := func(size, n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			s.named.mu.Lock()
			busy := s.named.refilling
			s.named.mu.Unlock()
			if gotSize, gotN := pool(); !busy && gotSize == size && gotN == n {
				return
			}
		}
		gotSize, gotN := pool()
		t.Fatalf("pool holds %d ids of size %d, want %d of %d", gotN, gotSize, n, size)
	}
	off := uint64(0)
	pack := func(n int) {
		writeAll(t, w, off, pattern(1, off, n))
		flush(t, w)
		off += uint64(n)
	}
	pack(1000)
	pack(1000)
	settle(1000, namedCount)
	for range namedSwitch - 1 {
		pack(2000)
	}
	settle(1000, namedCount)
	pack(2000)
	settle(2000, namedCount)
	for range namedSwitch {
		pack(namedMax + 1000) // too large to take a prepared name
	}
	settle(2000, namedCount)
}
