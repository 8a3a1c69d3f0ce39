// Package metatest is the conformance suite every meta.Engine passes,
// unchanged. An engine joins it in a few lines:
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) meta.Engine { return newEmptyEngine(t) })
//	}
//
// and, for engines that several mounts share, RunClients with a factory of
// n engines over one store.
//
// newEngine must return an engine over an empty, unformatted store; the
// suite formats it and closes it when the subtest ends. The suite covers
// every Engine method and errno case documented in meta/engine.go and
// meta/posix.go, link counts and times, orphans and freed slices, slice
// results checked through meta.Resolve, paged readdir of a large directory,
// concurrent clients, and a model-based test (rapid) comparing random
// operation sequences with an in-memory POSIX tree.
//
// Import rules: metatest imports meta and the standard library (and rapid),
// never an engine, so every engine's tests may import it.
package metatest

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

// Factory returns a fresh engine over an empty store.
type Factory func(t *testing.T) meta.Engine

// Run runs the whole suite against engines made by newEngine.
func Run(t *testing.T, newEngine Factory) {
	groups := []struct {
		name string
		fn   func(t *testing.T, newEngine Factory)
	}{
		{"Format", testFormat},
		{"Namespace", testNamespace},
		{"Remove", testRemove},
		{"Rename", testRename},
		{"Permissions", testPermissions},
		{"Setattr", testSetattr},
		{"Chunks", testChunks},
		{"WriteSlices", testWriteSlices},
		{"CommitGate", testCommitGate},
		{"Truncate", testTruncate},
		{"Fallocate", testFallocate},
		{"Copy", testCopy},
		{"Snapshot", testSnapshot},
		{"Clone", testClone},
		{"Compact", testCompact},
		{"Xattr", testXattr},
		{"ACL", testACL},
		{"ACLInherit", testACLInherit},
		{"Statfs", testStatfs},
		{"VolumeQuota", testVolumeQuota},
		{"DirQuota", testDirQuota},
		{"Trash", testTrash},
		{"ReaddirPaging", testReaddirPaging},
		{"Concurrency", testConcurrency},
		{"Admin", testAdmin},
		{"Locks", testLocks},
		{"OpenTracker", testOpenTracker},
		{"Report", testReport},
		{"Model", testModel},
		{"Written", testWritten},
		{"FreedPaging", testFreedPaging},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { g.fn(t, newEngine) })
	}
}

// env is one formatted engine and a root context.
type env struct {
	t   testing.TB
	e   meta.Engine
	ctx context.Context
}

// open makes and formats a fresh engine, closed at the end of the test.
func open(t *testing.T, newEngine Factory) *env {
	t.Helper()
	e := newEngine(t)
	t.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	if err := e.Format(ctx, meta.Format{Name: "test", Storage: "mem", BlockSize: 1 << 20}, false); err != nil {
		t.Fatalf("Format: %v", err)
	}
	return &env{t: t, e: e, ctx: ctx}
}

// as returns a context with the given credentials.
func (v *env) as(c meta.Cred) context.Context { return meta.WithCred(v.ctx, c) }

// check fails the test on an unexpected error.
func (v *env) check(err error, what string) {
	v.t.Helper()
	if err != nil {
		v.t.Fatalf("%s: %v", what, err)
	}
}

// wantErrno fails unless err is exactly want (0 = nil).
func (v *env) wantErrno(err error, want syscall.Errno, what string) {
	v.t.Helper()
	if !isErrno(err, want) {
		v.t.Fatalf("%s: got %v, want %v", what, err, errnoName(want))
	}
}

func isErrno(err error, want syscall.Errno) bool {
	if want == 0 {
		return err == nil
	}
	var got syscall.Errno
	return errors.As(err, &got) && got == want
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return e.Error()
}

// mk creates an inode of type typ with mode in parent as root.
func (v *env) mk(parent meta.Ino, name string, typ meta.Type, mode uint16) meta.Entry {
	v.t.Helper()
	return v.mkAs(v.ctx, parent, name, typ, mode)
}

func (v *env) mkAs(ctx context.Context, parent meta.Ino, name string, typ meta.Type, mode uint16) meta.Entry {
	v.t.Helper()
	req := meta.MknodRequest{Parent: parent, Name: name, Type: typ, Mode: mode, Exclusive: true}
	if typ == meta.TypeSymlink {
		req.Target = "target-of-" + name
	}
	ent, err := v.e.Mknod(ctx, req)
	v.check(err, "mknod "+name)
	return ent
}

func (v *env) file(parent meta.Ino, name string) meta.Entry {
	v.t.Helper()
	return v.mk(parent, name, meta.TypeFile, 0o644)
}

func (v *env) dir(parent meta.Ino, name string) meta.Entry {
	v.t.Helper()
	return v.mk(parent, name, meta.TypeDir, 0o755)
}

func (v *env) attr(ino meta.Ino) meta.Attr {
	v.t.Helper()
	a, err := v.e.Getattr(v.ctx, ino)
	v.check(err, "getattr")
	return a
}

// names lists a directory in one Readdir call.
func (v *env) names(dir meta.Ino) []string {
	v.t.Helper()
	ents, err := v.e.Readdir(v.ctx, dir, "", 0, false)
	v.check(err, "readdir")
	out := make([]string, 0, len(ents))
	for _, d := range ents {
		out = append(out, d.Name)
	}
	return out
}

// write commits a fresh slice of n bytes at file offset off (within one
// chunk) and returns it.
func (v *env) write(ino meta.Ino, off uint64, n uint32) meta.Slice {
	v.t.Helper()
	id, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	s := meta.Slice{ID: id, Size: n, Len: n, Pos: uint32(off % meta.ChunkSize)}
	_, err = v.e.WriteChunk(v.ctx, ino, uint32(off/meta.ChunkSize), s)
	v.check(err, "write chunk")
	return s
}

// view resolves [pos, pos+n) of chunk index of ino.
func (v *env) view(ino meta.Ino, index, pos, n uint32) []meta.Slice {
	v.t.Helper()
	ss, err := v.e.ReadChunk(v.ctx, ino, index)
	v.check(err, "read chunk")
	return meta.Resolve(ss, pos, n)
}

// freed returns the ids on the freed list.
func (v *env) freed() map[meta.SliceID]uint32 {
	v.t.Helper()
	ss, err := v.e.FreedSlices(v.ctx, 0, 1<<20)
	v.check(err, "freed slices")
	out := make(map[meta.SliceID]uint32, len(ss))
	for _, s := range ss {
		out[s.ID] = s.Size
	}
	return out
}
