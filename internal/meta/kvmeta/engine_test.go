package kvmeta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
)

// counting wraps a store and counts the reads (Gets and Scans) and writes
// of transactions;
// its Close does nothing, so several engines can share the inner store.
type counting struct {
	kv.Store
	mu           sync.Mutex
	gets, writes int
	scans        int
}

// scanned returns the Scans since the last call.
func (c *counting) scanned() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.scans
	c.scans = 0
	return n
}

func (c *counting) Close() error { return nil }

func (c *counting) reset() (gets, writes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gets, writes = c.gets, c.writes
	c.gets, c.writes = 0, 0
	return gets, writes
}

func (c *counting) Txn(ctx context.Context, fn func(kv.Tx) error) error {
	return c.Store.Txn(ctx, func(tx kv.Tx) error { return fn(&countingTx{Tx: tx, c: c}) })
}

func (c *counting) View(ctx context.Context, fn func(kv.Tx) error) error {
	return c.Store.View(ctx, func(tx kv.Tx) error { return fn(&countingTx{Tx: tx, c: c}) })
}

type countingTx struct {
	kv.Tx
	c *counting
}

func (t *countingTx) Get(key []byte) ([]byte, error) {
	t.c.mu.Lock()
	t.c.gets++
	t.c.mu.Unlock()
	return t.Tx.Get(key)
}

func (t *countingTx) Scan(prefix, after []byte, limit int, fn func(key, value []byte) bool) error {
	t.c.mu.Lock()
	t.c.gets++
	t.c.scans++
	t.c.mu.Unlock()
	return t.Tx.Scan(prefix, after, limit, fn)
}

func (t *countingTx) Delete(key []byte) {
	t.c.mu.Lock()
	t.c.writes++
	t.c.mu.Unlock()
	t.Tx.Delete(key)
}

func (t *countingTx) Set(key, value []byte) {
	t.c.mu.Lock()
	t.c.writes++
	t.c.mu.Unlock()
	t.Tx.Set(key, value)
}

func newTestEngine(t *testing.T) (*Engine, *counting, context.Context) {
	t.Helper()
	store := &counting{Store: memkv.New()}
	e, ctx := formatOn(t, store)
	return e, store, ctx
}

// formatOn formats a volume on store and returns its engine (closed at
// the end of the test) and a trusted context.
func formatOn(t *testing.T, store kv.Store) (*Engine, context.Context) {
	t.Helper()
	e := New(store, Options{})
	t.Cleanup(func() { _ = e.Close() })
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	if err := e.Format(ctx, meta.Format{Name: "t"}, false); err != nil {
		t.Fatal(err)
	}
	return e, ctx
}

// TestOperationCost pins the number of kv reads and writes of the hot
// operations, which decide how close SQLite gets to a local disk.
func TestOperationCost(t *testing.T) {
	e, store, ctx := newTestEngine(t)
	if _, err := e.NewSliceID(ctx); err != nil { // reserve the id batches first
		t.Fatal(err)
	}
	if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "warm", Type: meta.TypeFile}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		op           func() error
		gets, writes int
	}{
		{"create", func() error {
			_, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "f", Type: meta.TypeFile, Exclusive: true})
			return err
		}, 2, 3},
		{"lookup", func() error { _, err := e.Lookup(ctx, meta.RootIno, "f"); return err }, 2, 0},
		{"getattr", func() error { _, err := e.Getattr(ctx, meta.RootIno); return err }, 1, 0},
		{"write", func() error { // a file this client created: its chunk is known empty
			ent, _ := e.Lookup(ctx, meta.RootIno, "f")
			store.reset()
			_, err := e.WriteChunk(ctx, ent.Ino, 0, meta.Slice{ID: 1, Size: 10, Len: 10})
			return err
		}, 1, 2},
		{"second write", func() error { // appends a key; the list is cached
			ent, _ := e.Lookup(ctx, meta.RootIno, "f")
			store.reset()
			_, err := e.WriteChunk(ctx, ent.Ino, 0, meta.Slice{ID: 2, Size: 10, Len: 10, Pos: 10})
			return err
		}, 1, 2},
		{"unlink", func() error { _, err := e.Unlink(ctx, meta.RootIno, "warm"); return err }, 3, 4},
	}
	for _, c := range cases {
		store.reset()
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if gets, writes := store.reset(); gets != c.gets || writes != c.writes {
			t.Errorf("%s: %d gets, %d writes; want %d, %d", c.name, gets, writes, c.gets, c.writes)
		}
	}
}

// TestTwoClients runs two engines over one store, as two mounts of one
// volume: ids never collide and each sees the other's changes.
func TestTwoClients(t *testing.T) {
	shared := memkv.New()
	ctx := context.Background()
	a, b := New(&counting{Store: shared}, Options{}), New(&counting{Store: shared}, Options{})
	if err := a.Format(ctx, meta.Format{Name: "t"}, false); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	inos := make([][]meta.Ino, 2)
	for i, e := range []*Engine{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprintf("%d-%d", i, j), Type: meta.TypeFile})
				if err != nil {
					t.Error(err)
					return
				}
				inos[i] = append(inos[i], ent.Ino)
			}
		}()
	}
	wg.Wait()
	seen := map[meta.Ino]bool{}
	for _, list := range inos {
		for _, ino := range list {
			if seen[ino] {
				t.Fatalf("ino %d handed out twice", ino)
			}
			seen[ino] = true
		}
	}
	if ents, err := b.Readdir(ctx, meta.RootIno, "", 0, false); err != nil || len(ents) != 400 {
		t.Fatalf("b sees %d entries (%v)", len(ents), err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := New(&counting{Store: shared}, Options{})
	defer c.Close()
	st, err := c.Statfs(ctx)
	if err != nil || st.UsedInodes != 401 {
		t.Fatalf("statfs after both flushed: %+v %v", st, err)
	}
}

// TestIDGiveBack checks that a failed create does not burn an inode number.
func TestIDGiveBack(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	req := meta.MknodRequest{Parent: meta.RootIno, Name: "x", Type: meta.TypeFile, Exclusive: true}
	first, err := e.Mknod(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Mknod(ctx, req); err == nil {
		t.Fatal("second exclusive create succeeded")
	}
	req.Name = "y"
	second, err := e.Mknod(ctx, req)
	if err != nil || second.Ino != first.Ino+1 {
		t.Fatalf("next ino %d (%v), want %d", second.Ino, err, first.Ino+1)
	}
}

// TestReservedNumber: MknodRequest.Reserved is told the number the new
// inode gets before the create commits, and a number it was told is not
// handed out again when the create fails (an intent naming it could
// otherwise match a later create's name).
func TestReservedNumber(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	var told []meta.Ino
	req := meta.MknodRequest{Parent: meta.RootIno, Name: "x", Type: meta.TypeFile, Exclusive: true,
		Reserved: func(ino meta.Ino) { told = append(told, ino) }}
	first, err := e.Mknod(ctx, req)
	if err != nil || len(told) != 1 || told[0] != first.Ino {
		t.Fatalf("create: %+v %v, told %v", first, err, told)
	}
	if _, err := e.Mknod(ctx, req); err == nil || len(told) != 2 {
		t.Fatalf("second exclusive create: %v, told %v", err, told)
	}
	req.Name = "y"
	second, err := e.Mknod(ctx, req)
	if err != nil || second.Ino == told[1] || second.Ino != told[2] {
		t.Fatalf("create after a failed one: %+v %v, told %v", second, err, told)
	}
}

// TestMovingInode: RenameRequest.Moving is told the inode the old name
// holds, for a rename and an exchange alike, and not at all when the old
// name is missing.
func TestMovingInode(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	a, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "a", Type: meta.TypeFile})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "b", Type: meta.TypeFile})
	if err != nil {
		t.Fatal(err)
	}
	var told []meta.Ino
	moving := func(ino meta.Ino) { told = append(told, ino) }
	if _, err := e.Rename(ctx, meta.RenameRequest{OldParent: meta.RootIno, OldName: "a", NewParent: meta.RootIno, NewName: "b",
		Flags: meta.RenameExchange, Moving: moving}); err != nil || len(told) != 1 || told[0] != a.Ino {
		t.Fatalf("exchange: %v, told %v, want [%d]", err, told, a.Ino)
	}
	if _, err := e.Rename(ctx, meta.RenameRequest{OldParent: meta.RootIno, OldName: "a", NewParent: meta.RootIno, NewName: "c",
		Moving: moving}); err != nil || len(told) != 2 || told[1] != b.Ino {
		t.Fatalf("rename: %v, told %v, want [%d %d]", err, told, a.Ino, b.Ino)
	}
	if _, err := e.Rename(ctx, meta.RenameRequest{OldParent: meta.RootIno, OldName: "gone", NewParent: meta.RootIno, NewName: "d",
		Moving: moving}); err == nil || len(told) != 2 {
		t.Fatalf("rename of a missing name: %v, told %v", err, told)
	}
}

func TestAttrRoundTrip(t *testing.T) {
	a := meta.Attr{Type: meta.TypeDir, Mode: 0o7755, Uid: 1, Gid: 2, Atime: -3, Mtime: 4, Ctime: 5,
		Nlink: 6, Length: 1 << 40, Rdev: 8, Parent: 9}
	got, err := decodeAttr(encodeAttr(&a))
	if err != nil || got != a {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := decodeAttr([]byte{2, 1}); err == nil {
		t.Fatal("bad record accepted")
	}
}

func TestLoadRefusesNewerFormat(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	corrupt(t, e, func(tx kv.Tx) {
		tx.Set(formatKey(), []byte(`{"name":"t","version":99}`))
	})
	if _, err := e.Load(ctx); !errors.Is(err, meta.ErrNewerFormat) {
		t.Fatalf("Load of a newer volume: %v", err)
	}
	fresh := New(&counting{Store: memkv.New()}, Options{})
	defer fresh.Close()
	st, err := fresh.Statfs(ctx)
	if !errors.Is(err, meta.ErrNotFormatted) {
		t.Fatalf("Statfs of an unformatted store: %+v %v", st, err)
	}
}

func TestStatfsDefaults(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	st, err := e.Statfs(ctx)
	if err != nil || st.TotalSpace != defaultCapacity || st.TotalInodes != defaultInodes || st.UsedInodes != 1 {
		t.Fatalf("statfs %+v %v", st, err)
	}
}

// TestUnlinkFastPath checks the one-transaction unlink of a file nobody
// holds open (meta.OpenTracker): no orphan, no scans for an empty file
// without xattrs, and xattrs deleted with a file that had them.
func TestUnlinkFastPath(t *testing.T) {
	e, store, ctx := newTestEngine(t)
	e.SetOpenCheck(func(meta.Ino) bool { return false })
	mk := func(name string) meta.Entry {
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		return ent
	}
	mk("plain")
	x := mk("with-xattr")
	if err := e.Setxattr(ctx, x.Ino, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	store.reset()
	rm, err := e.Unlink(ctx, meta.RootIno, "plain")
	if err != nil || rm.Orphan {
		t.Fatalf("fast unlink: %+v %v", rm, err)
	}
	// Reads: the entry, the inode, the parent, and one scan of the
	// inode's open records (is it open in another session?); writes: the
	// parent's attr and the deletes of the entry and the inode.
	if gets, writes := store.reset(); gets != 4 || writes != 3 {
		t.Errorf("fast unlink: %d reads, %d writes; want 4, 3", gets, writes)
	}
	// A file this client created open and released: no other session can
	// hold a record of it, so there is no scan; its own record, dropped by
	// the flush or not, is deleted blind in the unlink (a retried attempt
	// must not trust what a rolled-back one noted).
	if _, err := e.BeginSession(ctx, meta.SessionInfo{Host: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, flushed := range []bool{true, false} {
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "own", Type: meta.TypeFile, Mode: 0o644, Open: true})
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Release(ctx, ent.Ino)
		if flushed {
			if err := e.flushReleases(ctx); err != nil {
				t.Fatal(err)
			}
		}
		store.reset()
		if rm, err := e.Unlink(ctx, meta.RootIno, "own"); err != nil || rm.Orphan {
			t.Fatalf("unlink of own released file: %+v %v", rm, err)
		}
		want := 4
		if gets, writes := store.reset(); gets != 3 || writes != want {
			t.Errorf("unlink of own released file (flushed %v): %d reads, %d writes; want 3, %d", flushed, gets, writes, want)
		}
	}
	if _, err := e.Unlink(ctx, meta.RootIno, "with-xattr"); err != nil {
		t.Fatal(err)
	}
	err = e.view(ctx, func(tx *txn) error {
		return tx.tx.Scan(inoKey(kindXattr, x.Ino), nil, 0, func(k, _ []byte) bool {
			t.Errorf("xattr key %q survived its inode", k)
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if orphans, _ := e.Orphans(ctx, 0); len(orphans) != 0 {
		t.Fatalf("orphans %v", orphans)
	}
}

// TestDirMtimeWindow checks that entry changes inside the window leave the
// directory's record alone unless its link count changes.
func TestDirMtimeWindow(t *testing.T) {
	store := &counting{Store: memkv.New()}
	e := New(store, Options{DirMtimeWindow: time.Hour})
	defer e.Close()
	ctx := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	if err := e.Format(ctx, meta.Format{Name: "t"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "warm", Type: meta.TypeFile}); err != nil {
		t.Fatal(err) // reserves the inode batch
	}
	before, _ := e.Getattr(ctx, meta.RootIno)
	store.reset()
	if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "f", Type: meta.TypeFile}); err != nil {
		t.Fatal(err)
	}
	if _, writes := store.reset(); writes != 2 {
		t.Errorf("create in a young directory: %d writes, want 2", writes)
	}
	if after, _ := e.Getattr(ctx, meta.RootIno); after != before {
		t.Errorf("directory changed inside the window: %+v -> %+v", before, after)
	}
	if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir}); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.Getattr(ctx, meta.RootIno); after.Nlink != 3 || after.Mtime <= before.Mtime {
		t.Errorf("mkdir must update the parent: %+v", after)
	}
	if err := e.Rmdir(ctx, meta.RootIno, "d"); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.Getattr(ctx, meta.RootIno); after.Nlink != 2 {
		t.Errorf("rmdir must update the parent's nlink: %+v", after)
	}
}
