package gc_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shoal/internal/gc"
	"shoal/internal/identity"
	"shoal/internal/meta"
)

// TestSharedBucketRefused: while another volume (a copy loaded from a
// dump) claims the bucket, gc deletes nothing, neither leaked objects nor
// the objects of freed slices, and says why and what to do; a dry run
// still reports. Once the other claim is released, gc deletes again.
func TestSharedBucketRefused(t *testing.T) {
	e := newEnv(t)
	keep := content(7, 2*blockSize)
	ino := e.write("keep", keep)
	gone := e.write("gone", content(8, blockSize))
	if _, err := e.eng.Unlink(e.ctx, meta.RootIno, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.eng.Purge(e.ctx, gone); err != nil {
		t.Fatal(err)
	}
	// The copy's own block, which this volume does not reference.
	theirs := e.stray(1<<40+5, 0, blockSize)
	e.claimOwn()
	other := identity.Claim{UUID: "copy-uuid", Name: "copy", Claimed: time.Now(), How: identity.HowLoad}
	if err := identity.Put(e.ctx, e.store, other); err != nil {
		t.Fatal(err)
	}
	before := e.count()

	o := gc.Options{Grace: time.Nanosecond, DeleteFreed: true, BlockSize: blockSize}
	rep, err := gc.Run(e.ctx, e.eng, e.store, o)
	if !errors.Is(err, identity.ErrShared) {
		t.Fatalf("gc of a shared bucket: err = %v, want ErrShared", err)
	}
	for _, want := range []string{"copy-uuid", "claimed by 2 volumes", "shoal claims --release"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not say %q: %v", want, err)
		}
	}
	if rep == nil || rep.Refused == "" || rep.Deleted.Objects+rep.FreedDel.Objects != 0 {
		t.Fatalf("report of a refused run: %+v", rep)
	}
	if after := e.count(); after != before || !e.exists(theirs) {
		t.Fatalf("a refused gc deleted objects: %d before, %d after", before, after)
	}
	dry, err := gc.Run(e.ctx, e.eng, e.store, gc.Options{DryRun: true, Grace: time.Nanosecond, BlockSize: blockSize})
	if err != nil || dry.Shared == "" || dry.Leaked.Objects != 1 {
		t.Fatalf("dry run of a shared bucket: err %v, report %+v", err, dry)
	}

	if err := identity.Release(e.ctx, e.store, other.UUID); err != nil {
		t.Fatal(err)
	}
	rep = e.run(o)
	if rep.Deleted.Objects != 1 || rep.FreedDel.Objects != 1 || e.exists(theirs) {
		t.Fatalf("after the release: %+v", rep)
	}
	e.readBack(ino, keep)
}

// TestForeignBucketRefused: a bucket claimed only by other volumes is not
// this volume's: gc refuses before reading anything.
func TestForeignBucketRefused(t *testing.T) {
	e := newEnv(t)
	if err := identity.Put(e.ctx, e.store, identity.Claim{UUID: "owner", Name: "other"}); err != nil {
		t.Fatal(err)
	}
	theirs := e.stray(42, 0, blockSize)
	_, err := gc.Run(e.ctx, e.eng, e.store, gc.Options{Grace: time.Nanosecond, BlockSize: blockSize})
	if !errors.Is(err, identity.ErrNotClaimant) || !e.exists(theirs) {
		t.Fatalf("gc of another volume's bucket: err = %v, object kept %v", err, e.exists(theirs))
	}
}

// claimOwn records the volume's claim, as its first mount would.
func (e *env) claimOwn() {
	f, err := e.eng.Load(e.ctx)
	if err == nil {
		_, err = identity.Check(e.ctx, e.store, f)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// count is the number of objects in the store.
func (e *env) count() int {
	infos, err := e.store.List(e.ctx, "", "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(infos)
}
