package kvmeta

import (
	"bytes"
	"context"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
)

// TestRestoreDropsSessions: a dump taken while a client was mounted, held
// locks and kept an unlinked file open carries its session, session
// indexes and lock records; a restore writes none of them (the loaded
// volume has no client), and keeps the orphan for the loader to purge.
func TestRestoreDropsSessions(t *testing.T) {
	ctx := context.Background()
	src := New(memkv.New(), Options{})
	defer src.Close()
	if err := src.Format(ctx, meta.Format{Name: "src", UUID: "u", BlockSize: 4096}, false); err != nil {
		t.Fatal(err)
	}
	src.SetOpenCheck(func(meta.Ino) bool { return true })
	if _, err := src.BeginSession(ctx, meta.SessionInfo{Host: "h", Mountpoint: "/mnt"}); err != nil {
		t.Fatal(err)
	}
	a := mknod(t, src, "a")
	b := mknod(t, src, "b")
	if err := src.Flock(ctx, a, 1, meta.LockWrite); err != nil {
		t.Fatal(err)
	}
	if err := src.Setlk(ctx, a, 2, meta.Lock{Type: meta.LockWrite, Start: 0, End: 10, Pid: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Unlink(ctx, meta.RootIno, "b"); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []byte{kindSession, kindSessionOrphan, kindSessionLock, kindFlock, kindPlock, kindOrphan} {
		if countKind(t, src.store, kind) == 0 {
			t.Fatalf("setup: the source has no %q keys", kind)
		}
	}
	var dump bytes.Buffer
	if err := src.Dump(ctx, &dump); err != nil {
		t.Fatal(err)
	}

	dst := New(memkv.New(), Options{})
	defer dst.Close()
	if err := dst.Restore(ctx, &dump); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []byte{kindSession, kindSessionOrphan, kindSessionLock, kindFlock, kindPlock} {
		if n := countKind(t, dst.store, kind); n != 0 {
			t.Errorf("restored %d %q keys", n, kind)
		}
	}
	if ss, err := dst.ListSessions(ctx); err != nil || len(ss) != 0 {
		t.Errorf("restored volume lists sessions %+v (%v)", ss, err)
	}
	if orphans, err := dst.Orphans(ctx, 0); err != nil || len(orphans) != 1 || orphans[0].Ino != b {
		t.Errorf("orphans after restore: %+v (%v), want inode %d", orphans, err, b)
	}
}

// TestSkipSliceIDs: the counter moves n ids past the source's, reserved
// batches included.
func TestSkipSliceIDs(t *testing.T) {
	ctx := context.Background()
	e := New(memkv.New(), Options{})
	defer e.Close()
	if err := e.Format(ctx, meta.Format{Name: "v", BlockSize: 4096}, false); err != nil {
		t.Fatal(err)
	}
	before, err := e.NewSliceID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 40
	if err := e.SkipSliceIDs(ctx, n); err != nil {
		t.Fatal(err)
	}
	after, err := e.NewSliceID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after < before+n {
		t.Fatalf("slice id after a skip of %d: %d (before: %d)", uint64(n), after, before)
	}
}

func mknod(t *testing.T, e *Engine, name string) meta.Ino {
	t.Helper()
	ent, err := e.Mknod(context.Background(), meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	return ent.Ino
}

func countKind(t *testing.T, s kv.Store, kind byte) int {
	t.Helper()
	n := 0
	err := s.View(context.Background(), func(tx kv.Tx) error {
		return tx.Scan([]byte{kind}, nil, 0, func(_, _ []byte) bool { n++; return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
