package gc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shoal/internal/gc"
	"shoal/internal/meta"
	"shoal/internal/meta/kvmeta"
)

// moveHook moves a slice's only reference to a new inode at the first
// callback of each ScanSlices: after the scan listed the inodes (so it
// never lists the new holder) and before it reads the old holder's
// chunks (gone by then).
type moveHook struct {
	*kvmeta.Engine
	move func(call int)
	call int
}

func (h *moveHook) ScanSlices(ctx context.Context, fn func(meta.Ino, uint32, meta.Slice) error) error {
	h.call++
	call, first := h.call, true
	return h.Engine.ScanSlices(ctx, func(ino meta.Ino, index uint32, s meta.Slice) error {
		if first {
			first = false
			h.move(call)
		}
		return fn(ino, index, s)
	})
}

// TestSnapshotDuringScansKeepsBlocks is the gap of the package doc's step
// 5, made likely by snapshots and clones: a snapshot takes a file's
// slice during the main scan and the file goes; a clone of the snapshot's
// copy takes it during the confirmation scan and the snapshot goes. Both
// scans miss the slice; without the copy counter gc deleted its blocks
// under the clone.
func TestSnapshotDuringScansKeepsBlocks(t *testing.T) {
	e := newEnv(t)
	for i := range 300 { // more than one scan batch comes before f
		e.write(fmt.Sprintf("a%03d", i), content(uint64(i), 10))
	}
	b := content(99, 2*blockSize)
	f := e.write("f", b)
	ctx := meta.WithCred(e.ctx, meta.Cred{})
	var last meta.Ino
	hook := &moveHook{Engine: e.eng, move: func(call int) {
		switch call {
		case 1:
			if _, err := e.eng.CreateSnapshot(ctx, "s", "f"); err != nil {
				t.Errorf("snapshot: %v", err)
			}
			if _, err := e.eng.Unlink(ctx, meta.RootIno, "f"); err != nil {
				t.Errorf("unlink: %v", err)
			}
			if err := e.eng.Purge(ctx, f); err != nil {
				t.Errorf("purge: %v", err)
			}
		case 2:
			dir, _ := e.eng.Lookup(ctx, meta.RootIno, kvmeta.SnapshotDir)
			snap, _ := e.eng.Lookup(ctx, dir.Ino, "s")
			ent, err := e.eng.Clone(ctx, meta.CloneRequest{Src: snap.Ino, Parent: meta.RootIno, Name: "f3"})
			if err != nil {
				t.Errorf("clone: %v", err)
			}
			last = ent.Ino
			if err := e.eng.DeleteSnapshot(ctx, "s"); err != nil {
				t.Errorf("delete snapshot: %v", err)
			}
		}
	}}
	rep, err := gc.Run(e.ctx, hook, e.store, gc.Options{Grace: time.Nanosecond, BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	if hook.call != 2 || last == 0 {
		t.Fatalf("the scans ran %d times: %+v", hook.call, rep)
	}
	if rep.Deleted.Objects != 0 || rep.Postponed != 2 {
		t.Fatalf("gc deleted %d objects, postponed %d; want 0 and the 2 blocks of f", rep.Deleted.Objects, rep.Postponed)
	}
	e.readBack(last, b)
	// With no copies during the run, a later gc finds them referenced.
	rep = e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Deleted.Objects != 0 || rep.Leaked.Objects != 0 {
		t.Fatalf("second gc: %+v", rep)
	}
	e.readBack(last, b)
}
