package kvmeta

import (
	"context"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
)

// TestReleasedRecordLingers checks linger.go: after a release and a
// flush, reopening the file writes nothing (its record is still stored),
// and a lingering record of an inode that another client unlinked meanwhile
// is dropped by the next flush, which purges the orphan.
func TestReleasedRecordLingers(t *testing.T) {
	shared := memkv.New()
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	store := &counting{Store: shared}
	// No background flush: the test flushes a where it means to.
	a := New(store, Options{FlushInterval: time.Hour})
	t.Cleanup(func() { _ = a.Close() })
	if err := a.Format(ctx, meta.Format{Name: "t"}, false); err != nil {
		t.Fatal(err)
	}
	b := New(&counting{Store: shared}, Options{})
	t.Cleanup(func() { _ = b.Close() })
	for _, e := range []*Engine{a, b} {
		e.SetOpenCheck(func(meta.Ino) bool { return false })
		if _, err := e.BeginSession(ctx, meta.SessionInfo{Host: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	ent, err := a.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "f", Type: meta.TypeFile, Mode: 0o644, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := a.Release(ctx, ent.Ino); err != nil {
			t.Fatal(err)
		}
		if err := a.flushLingering(ctx); err != nil {
			t.Fatal(err)
		}
		store.reset()
		if _, err := a.Open(ctx, ent.Ino, meta.MayRead); err != nil {
			t.Fatal(err)
		}
		if _, writes := store.reset(); writes != 0 {
			t.Errorf("reopen %d after release and flush: %d writes, want 0", i, writes)
		}
	}
	if err := a.Release(ctx, ent.Ino); err != nil {
		t.Fatal(err)
	}
	if err := a.flushLingering(ctx); err != nil {
		t.Fatal(err)
	}
	rm, err := b.Unlink(ctx, meta.RootIno, "f")
	if err != nil || !rm.Orphan {
		t.Fatalf("unlink on b of a file whose record lingers on a: %+v %v (want an orphan)", rm, err)
	}
	if err := b.Purge(ctx, rm.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Getattr(ctx, ent.Ino); err != nil {
		t.Fatalf("orphan gone while a's record lingers: %v", err)
	}
	if err := a.flushLingering(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Getattr(ctx, ent.Ino); err != syscall.ENOENT {
		t.Fatalf("orphan after a's flush: %v, want ENOENT", err)
	}
}

// TestAdoptedDropsLeftRecords checks that a server taking over a resumed
// session drops the records the process before it kept of files it had
// released (meta.OpenAdopter), and keeps those of the files it adopted.
func TestAdoptedDropsLeftRecords(t *testing.T) {
	shared := memkv.New()
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	a, _ := formatOn(t, &counting{Store: shared})
	id, err := a.BeginSession(ctx, meta.SessionInfo{Host: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var files []meta.Entry
	for _, name := range []string{"released", "adopted"} {
		ent, err := a.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644, Open: true})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ent)
	}
	if err := a.Release(ctx, files[0].Ino); err != nil {
		t.Fatal(err)
	}
	// The successor: the same session, a fresh process.
	b := New(&counting{Store: shared}, Options{})
	t.Cleanup(func() { _ = b.Close() })
	if err := b.ResumeSession(ctx, id, meta.SessionInfo{Host: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, files[1].Ino, meta.MayRead); err != nil {
		t.Fatal(err)
	}
	if err := b.Adopted(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.flushLingering(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} {
		var v []byte
		err := shared.View(ctx, func(tx kv.Tx) (err error) {
			v, err = tx.Get(openKey(files[i].Ino, id))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if (v != nil) != want {
			t.Errorf("record of file %d after the takeover's flush: stored %v, want %v", i, v != nil, want)
		}
	}
}
