package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/filestore"
)

// syncLogStore logs when the SyncBatch of a Put that left its
// durability to one (object.WithSyncBatch) makes it durable, and can
// make that fail.
type syncLogStore struct {
	object.Store
	log     *trace
	failing atomic.Bool
}

func (s *syncLogStore) Put(ctx context.Context, key string, rd io.Reader, size int64) error {
	err := s.Store.Put(ctx, key, rd, size)
	if b := object.SyncBatchOf(ctx); err == nil && b != nil {
		fail := s.failing.Load()
		b.Later("log "+key, func() error {
			if fail {
				return errInjected
			}
			s.log.add("synced %s", key)
			return nil
		})
	}
	return err
}

func (s *syncLogStore) Unwrap() object.Store { return s.Store }

// gatedSetup makes a Store with Config.GatedCommit over a file store with
// prepared names, and a writer of inode 1 whose commits await their gate
// (as kvmeta's do) and are logged; it returns them once small packs take
// prepared names.
func gatedSetup(t *testing.T) (*Store, *Writer, *engine, *syncLogStore, *trace, *model) {
	fs, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := &trace{}
	e := newEngine(log)
	logged := &syncLogStore{Store: fs, log: log}
	s := newTestStore(t, &recordStore{Store: logged, log: log}, Config{BlockSize: 1 << 20, NewID: e.newID, GatedCommit: true})
	commit := e.committer(1)
	w := s.NewWriter(1, e.newID, func(ctx context.Context, ws []meta.SliceWrite) error {
		if err := meta.AwaitCommitGate(ctx); err != nil {
			return err
		}
		return commit(ctx, ws)
	})
	m := &model{}
	for i := 0; i < 2; i++ {
		p := pattern(byte(i), 0, 1000)
		m.write(uint64(i*1000), p)
		writeAll(t, w, uint64(i*1000), p)
		flush(t, w)
	}
	awaitIdle(t, w)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n := s.named.held()
		if n >= namedCount {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d names prepared, want %d", n, namedCount)
		}
	}
	return s, w, e, logged, log, m
}

// awaitIdle waits until w runs no commit. Flush returns once its data is
// committed, a moment before the goroutine that committed it lets go of
// the writer; a pack stored in that moment takes the ungated path (its
// Put syncs by itself), which is right but not what a test of the gated
// path wants.
func awaitIdle(t *testing.T, w *Writer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		w.mu.Lock()
		idle := !w.committing
		w.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writer still committing after 10s")
		}
	}
}

// TestGatedCommitAfterSync checks the commit that runs beside a small
// pack's Put (gated.go): the Put leaves its fdatasync to a SyncBatch,
// and each such pack's slices are committed only after the batch made
// the object durable (the gate runs the batch's Sync before it lets the
// commit through), and the data reads back.
func TestGatedCommitAfterSync(t *testing.T) {
	s, w, e, _, log, m := gatedSetup(t)
	for i := 2; i < 8; i++ {
		p := pattern(byte(i), 0, 1000)
		m.write(uint64(i*1000), p)
		writeAll(t, w, uint64(i*1000), p)
		flush(t, w)
		awaitIdle(t, w)
	}
	synced := map[string]int{}
	gated := 0
	for i, ev := range log.snapshot() {
		var id meta.SliceID
		var size uint32
		if key, ok := strings.CutPrefix(ev, "synced "); ok {
			synced[key] = i
			gated++
		} else if _, err := fmt.Sscanf(ev, "commit %d %d", &id, &size); err == nil {
			key := BlockKey(id, 0, int(size))
			if at, ok := synced[key]; gated > 0 && (!ok || at > i) {
				t.Fatalf("commit of slice %d (event %d) before its object was synced: %v", id, i, log.snapshot())
			}
		}
	}
	if gated < 6 {
		t.Fatalf("%d packs took the gated path, want 6: %v", gated, log.snapshot())
	}
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}

// TestGatedCommitSyncFails checks that a pack whose deferred sync fails
// commits nothing: Flush reports the failure, and a later Flush stores
// and commits the data.
func TestGatedCommitSyncFails(t *testing.T) {
	s, w, e, logged, _, m := gatedSetup(t)
	e.mu.Lock()
	before := len(e.chunks[1][0])
	e.mu.Unlock()
	logged.failing.Store(true)
	p := pattern(9, 0, 1000)
	m.write(2000, p)
	writeAll(t, w, 2000, p)
	if err := w.Flush(t.Context()); !errors.Is(err, errInjected) {
		t.Fatalf("flush over a failing sync: %v, want %v", err, errInjected)
	}
	e.mu.Lock()
	after := len(e.chunks[1][0])
	e.mu.Unlock()
	if after != before {
		t.Fatalf("%d slices committed over a failed sync", after-before)
	}
	logged.failing.Store(false)
	flush(t, w)
	mustEqual(t, "read back", e.readFile(t, s.NewReader(1), 1, 0, len(m.data)), m.data)
}
