package kvmeta

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// corrupt writes raw keys behind the engine's back.
func corrupt(t *testing.T, e *Engine, fn func(tx kv.Tx)) {
	t.Helper()
	err := e.store.Txn(context.Background(), func(tx kv.Tx) error { fn(tx); return nil })
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckRepairs(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	d, _ := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir, Mode: 0o755})
	f, _ := e.Mknod(ctx, meta.MknodRequest{Parent: d.Ino, Name: "f", Type: meta.TypeFile, Mode: 0o644})
	id, _ := e.NewSliceID(ctx)
	if _, err := e.WriteChunk(ctx, f.Ino, 0, meta.Slice{ID: id, Size: 10, Len: 10}); err != nil {
		t.Fatal(err)
	}
	sl, _ := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "sl", Type: meta.TypeSymlink, Target: "x"})
	rep, err := e.Check(ctx, false)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("healthy: %+v %v", rep, err)
	}

	fAttr, _ := e.Getattr(ctx, f.Ino)
	fAttr.Nlink = 5
	fAttr.Alloc = 12345
	dAttr, _ := e.Getattr(ctx, d.Ino)
	dAttr.Parent = 12345
	corrupt(t, e, func(tx kv.Tx) {
		tx.Set(attrKey(f.Ino), encodeAttr(&fAttr))
		tx.Set(attrKey(d.Ino), encodeAttr(&dAttr))
		tx.Set(dentryKey(d.Ino, "dangling"), encodeDentry(999, meta.TypeFile))
		tx.Set(sliceKey(kindRefs, id), encodeInt(7))
		tx.Set(sliceKey(kindFreed, id), []byte{0, 0, 0, 10})
		tx.Set(orphanKey(888), encodeInt(1))
		tx.Delete(dentryKey(meta.RootIno, "sl"))
		tx.Set(counterKey(counterUsedInodes), encodeInt(1000))
		tx.Set(sessionIndexKey(kindSessionLock, 77, f.Ino), nil)
		tx.Set(flockKey(f.Ino), []byte{0, 0, 0, 0, 0, 0, 0, 77, 0, 0, 0, 0, 0, 0, 0, 1, 1})
		tx.Set(sessionIndexKey(kindSessionOrphan, 78, 888), nil)
		tx.Set(flockKey(555), []byte{0, 0, 0, 0, 0, 0, 0, 79, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	})
	rep, err = e.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{"nlink 5", "parent 12345", "inode 999 missing", "reference count 7",
		"listed as freed", "missing inode 888", "is not reachable", "usage counters",
		"locks of ended session 77", "12345 bytes allocated, chunks show 10", "session 78 lists inode 888", "lock records of missing inode 555"}
	all := strings.Join(rep.Problems, "\n")
	for _, w := range wants {
		if !strings.Contains(all, w) {
			t.Errorf("problem %q not reported in:\n%s", w, all)
		}
	}
	if rep, err = e.Check(ctx, true); err != nil || rep.Repaired != len(wants) {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, err = e.Check(ctx, false); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("after repair: %v %v", rep.Problems, err)
	}
	if _, err := e.Getattr(ctx, sl.Ino); err == nil {
		t.Fatal("unreachable symlink survived repair")
	}
	if err := e.Flock(ctx, f.Ino, 1, meta.LockWrite); err != nil {
		t.Fatalf("the dead session's lock survived repair: %v", err)
	}
}

// TestCheckOpenRecords checks fsck's rules for open records: records of
// ended sessions and missing inodes go, and an orphan that no live
// session holds (a crash half-way through letting go) is purged.
func TestCheckOpenRecords(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	live, err := e.BeginSession(ctx, meta.SessionInfo{Host: "x"})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "o", Type: meta.TypeFile, Mode: 0o644})
	kept, _ := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "kept", Type: meta.TypeFile, Mode: 0o644})
	oAttr, _ := e.Getattr(ctx, o.Ino)
	oAttr.Nlink = 0
	kAttr, _ := e.Getattr(ctx, kept.Ino)
	kAttr.Nlink = 0
	corrupt(t, e, func(tx kv.Tx) {
		for _, x := range []struct {
			name string
			ino  meta.Ino
			a    *meta.Attr
		}{{"o", o.Ino, &oAttr}, {"kept", kept.Ino, &kAttr}} {
			tx.Delete(dentryKey(meta.RootIno, x.name))
			tx.Set(attrKey(x.ino), encodeAttr(x.a))
			tx.Set(orphanKey(x.ino), orphanValue(90, 1)) // made by ended session 90
		}
		tx.Set(openKey(o.Ino, 91), nil)      // ended session 91
		tx.Set(openKey(555, live), nil)      // a missing inode
		tx.Set(openKey(kept.Ino, live), nil) // the live session holds kept
	})
	rep, err := e.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{"open record of session 91, which is gone",
		"inode 555: open record of session " + fmt.Sprint(live), "its session 90 ended"}
	all := strings.Join(rep.Problems, "\n")
	for _, w := range wants {
		if !strings.Contains(all, w) {
			t.Errorf("problem %q not reported in:\n%s", w, all)
		}
	}
	if strings.Count(all, "ended and no live session") != 1 {
		t.Errorf("want only orphan %d reported as unheld:\n%s", o.Ino, all)
	}
	if rep, err = e.Check(ctx, true); err != nil || rep.Repaired != len(wants) {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, err = e.Check(ctx, false); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("after repair: %v %v", rep.Problems, err)
	}
	if _, err := e.Getattr(ctx, o.Ino); err == nil {
		t.Fatal("unheld orphan survived repair")
	}
	if _, err := e.Getattr(ctx, kept.Ino); err != nil {
		t.Fatalf("orphan held by a live session: %v", err)
	}
}
