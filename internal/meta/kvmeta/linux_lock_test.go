//go:build linux

package kvmeta_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/testutil"
)

// TestLinuxLocksDifferential compares the engine's fcntl lock semantics
// (conflicts, splitting, merging, conversion) with the kernel's open file
// description locks: two descriptors of one local file are two owners, as
// are two owner ids in the engine. After every step, both owners probe
// every position with F_OFD_GETLK and Getlk, and must see the same lock
// (type and range) of the other owner.
func TestLinuxLocksDifferential(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		e := kvmeta.New(memkv.New(), kvmeta.Options{})
		defer e.Close()
		if err := e.Format(ctx, meta.Format{Name: "locks"}, false); err != nil {
			rt.Fatal(err)
		}
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "f", Type: meta.TypeFile, Mode: 0o644})
		if err != nil {
			rt.Fatal(err)
		}
		var fds [2]int
		for i := range fds {
			if fds[i], err = unix.Open(path, unix.O_RDWR, 0); err != nil {
				rt.Fatal(err)
			}
			defer unix.Close(fds[i])
		}
		ld := &lockDiff{e: e, ino: ent.Ino, fds: fds, ctx: ctx}
		rt.Repeat(map[string]func(*rapid.T){"setlk": ld.setlk, "": ld.probe})
	})
}

type lockDiff struct {
	e   *kvmeta.Engine
	ino meta.Ino
	fds [2]int
	ctx context.Context
}

var lockTypes = []int16{unix.F_RDLCK, unix.F_WRLCK, unix.F_UNLCK}

// engineType maps F_*LCK to the engine's lock types.
func engineType(t int16) uint32 {
	switch t {
	case unix.F_RDLCK:
		return meta.LockRead
	case unix.F_WRLCK:
		return meta.LockWrite
	}
	return meta.LockUnlock
}

// toLock turns a kernel range (start, len; len 0 = to the end) into an
// engine lock.
func toLock(typ int16, start, n int64) meta.Lock {
	end := uint64(meta.LockEnd)
	if n > 0 {
		end = uint64(start + n - 1)
	}
	return meta.Lock{Type: engineType(typ), Start: uint64(start), End: end}
}

func (ld *lockDiff) setlk(rt *rapid.T) {
	owner := rapid.IntRange(0, 1).Draw(rt, "owner")
	typ := rapid.SampledFrom(lockTypes).Draw(rt, "type")
	start := int64(rapid.IntRange(0, 20).Draw(rt, "start"))
	n := int64(rapid.IntRange(0, 8).Draw(rt, "len"))
	fl := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
	local := unix.FcntlFlock(uintptr(ld.fds[owner]), unix.F_OFD_SETLK, &fl)
	if local == syscall.EACCES {
		local = syscall.EAGAIN // fcntl may report a conflict either way
	}
	engine := ld.e.Setlk(ld.ctx, ld.ino, uint64(owner+1), toLock(typ, start, n))
	if testutil.Errno(local) != testutil.Errno(engine) {
		rt.Fatalf("setlk owner %d type %d [%d,+%d): linux %v, engine %v", owner, typ, start, n, local, engine)
	}
}

// probe asks, for each owner and position, which lock of the other owner
// a write lock there would meet.
func (ld *lockDiff) probe(rt *rapid.T) {
	for owner := range 2 {
		for pos := int64(0); pos <= 30; pos++ {
			fl := unix.Flock_t{Type: unix.F_WRLCK, Start: pos, Len: 1}
			if err := unix.FcntlFlock(uintptr(ld.fds[owner]), unix.F_OFD_GETLK, &fl); err != nil {
				rt.Fatal(err)
			}
			want := toLock(fl.Type, fl.Start, fl.Len)
			got, err := ld.e.Getlk(ld.ctx, ld.ino, uint64(owner+1), meta.Lock{Type: meta.LockWrite, Start: uint64(pos), End: uint64(pos)})
			if err != nil {
				rt.Fatal(err)
			}
			if want.Type == meta.LockUnlock {
				want = meta.Lock{Type: meta.LockUnlock, Start: uint64(pos), End: uint64(pos)}
			}
			got.Pid = 0
			if got != want {
				rt.Fatalf("owner %d probe at %d: linux %+v, engine %+v", owner, pos, want, got)
			}
		}
	}
}
