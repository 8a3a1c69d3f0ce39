package fusefs

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object/memstore"
	"shoal/internal/vfs"
)

// TestLockGrantedAfterQuiesceIsNotAnswered: a blocking lock request
// waiting when the process quiesces for a handover, granted afterwards,
// must not be answered by this process (its journal is closed, so the
// successor would never learn of the lock): it is left for the kernel to
// resend to the successor.
func TestLockGrantedAfterQuiesceIsNotAnswered(t *testing.T) {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	v := vfs.New(eng, data.New(memstore.New(), data.Config{BlockSize: 64 << 10}), vfs.Config{})
	if !v.Locking() {
		t.Skip("the in-memory engine keeps no locks")
	}
	e, res, err := v.Create(ctx, meta.RootIno, "f", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	fs := New(v, Options{})
	lk := func(owner uint64, typ uint32) *fuse.LkIn {
		return &fuse.LkIn{InHeader: fuse.InHeader{NodeId: uint64(e.Ino)}, Fh: uint64(res.Fh), Owner: owner,
			Lk: fuse.FileLock{Start: 0, End: meta.LockEnd, Typ: typ}}
	}
	if st := fs.SetLk(nil, lk(1, syscall.F_WRLCK)); st != fuse.OK {
		t.Fatalf("first lock: %v", st)
	}
	answered := make(chan fuse.Status, 1)
	go func() { answered <- fs.SetLkw(make(chan struct{}), lk(2, syscall.F_WRLCK)) }()
	time.Sleep(100 * time.Millisecond)
	fs.Quiesce()
	unlock := meta.Lock{Type: meta.LockUnlock, Start: 0, End: meta.LockEnd}
	if err := v.Setlk(ctx, res.Fh, e.Ino, 1, unlock, false); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-answered:
		t.Fatalf("a lock granted after Quiesce was answered (%v): the successor never learns it is held", st)
	case <-time.After(2 * time.Second):
	}
}
