package metatest

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"shoal/internal/meta"
)

// The model-based test runs random operation sequences against the engine
// and against mtree, a small in-memory POSIX tree written independently of
// the engine, and compares every result and, after every step, the whole
// tree: entries, types, link counts, lengths and file contents. Contents
// are compared as labels: byte i of a slice with id n reads as n<<32|i and
// a hole as 0, so a wrong offset or a lost hole shows up.
//
// All runs share one engine; each run works in its own directory. Run with
// -rapid.checks and -rapid.steps to search longer.

// mnode is a node of the model tree.
type mnode struct {
	ino    meta.Ino
	typ    meta.Type
	kids   map[string]*mnode // directories
	parent *mnode            // directories
	links  int               // non-directories
	length uint64            // regular files: length
	labels map[uint64]uint64 // regular files: non-zero byte labels by offset
}

type modelRun struct {
	v    *env
	root *mnode
}

var modelRuns atomic.Int64

func testModel(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	rapid.Check(t, func(rt *rapid.T) {
		name := fmt.Sprintf("run-%d", modelRuns.Add(1))
		ent := v.dir(meta.RootIno, name)
		m := &modelRun{v: v, root: &mnode{ino: ent.Ino, typ: meta.TypeDir, kids: map[string]*mnode{}}}
		rt.Repeat(map[string]func(*rapid.T){
			"create":   m.create,
			"unlink":   m.unlink,
			"rmdir":    m.rmdir,
			"link":     m.link,
			"rename":   m.rename,
			"write":    m.write,
			"truncate": m.truncate,
			"punch":    m.punch,
			"copy":     m.copyRange,
			"":         m.checkTree,
		})
	})
}

var modelNames = []string{"a", "b", "c", "d", "e"}

func drawName(rt *rapid.T, label string) string {
	return rapid.SampledFrom(modelNames).Draw(rt, label)
}

// dirs and files list the nodes reachable from the run's root.
func (m *modelRun) nodes(keep func(*mnode) bool) []*mnode {
	var out []*mnode
	seen := map[*mnode]bool{}
	var walk func(n *mnode)
	walk = func(n *mnode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if keep(n) {
			out = append(out, n)
		}
		for _, name := range sortedNames(n.kids) {
			walk(n.kids[name])
		}
	}
	walk(m.root)
	return out
}

func sortedNames(kids map[string]*mnode) []string {
	names := make([]string, 0, len(kids))
	for name := range kids {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (m *modelRun) drawDir(rt *rapid.T, label string) *mnode {
	return pick(rt, m.nodes(func(n *mnode) bool { return n.typ == meta.TypeDir }), label)
}

func (m *modelRun) drawFile(rt *rapid.T, label string) *mnode {
	files := m.nodes(func(n *mnode) bool { return n.typ == meta.TypeFile })
	if len(files) == 0 {
		rt.Skip("no files")
	}
	return pick(rt, files, label)
}

// pick draws one of nodes by index, so failure logs stay short.
func pick(rt *rapid.T, nodes []*mnode, label string) *mnode {
	return nodes[rapid.IntRange(0, len(nodes)-1).Draw(rt, label)]
}

// same fails the step unless the engine's err is the model's errno.
func same(rt *rapid.T, what string, err error, want syscall.Errno) {
	var got syscall.Errno
	if err != nil && !errors.As(err, &got) {
		rt.Fatalf("%s: unexpected error %v", what, err)
	}
	if got != want {
		rt.Fatalf("%s: engine says %v, model says %v", what, errnoName(got), errnoName(want))
	}
}

func (m *modelRun) create(rt *rapid.T) {
	dir, name := m.drawDir(rt, "dir"), drawName(rt, "name")
	typ := rapid.SampledFrom([]meta.Type{meta.TypeFile, meta.TypeDir, meta.TypeSymlink}).Draw(rt, "type")
	ent, err := m.v.e.Mknod(m.v.ctx, meta.MknodRequest{Parent: dir.ino, Name: name, Type: typ, Mode: 0o755, Target: "t", Exclusive: true})
	var want syscall.Errno
	if dir.kids[name] != nil {
		want = syscall.EEXIST
	}
	same(rt, "create "+name, err, want)
	if err != nil {
		return
	}
	n := &mnode{ino: ent.Ino, typ: typ, links: 1}
	if typ == meta.TypeDir {
		n.kids, n.parent, n.links = map[string]*mnode{}, dir, 0
	}
	dir.kids[name] = n
}

func (m *modelRun) unlink(rt *rapid.T) {
	dir, name := m.drawDir(rt, "dir"), drawName(rt, "name")
	rm, err := m.v.e.Unlink(m.v.ctx, dir.ino, name)
	n := dir.kids[name]
	switch {
	case n == nil:
		same(rt, "unlink", err, syscall.ENOENT)
	case n.typ == meta.TypeDir:
		same(rt, "unlink", err, syscall.EISDIR)
	default:
		same(rt, "unlink", err, 0)
		delete(dir.kids, name)
		m.dropLink(rt, n, rm)
	}
}

// dropLink mirrors an engine's removal of one link of n and purges orphans.
func (m *modelRun) dropLink(rt *rapid.T, n *mnode, rm meta.Removed) {
	n.links--
	orphan := n.links == 0 && n.typ == meta.TypeFile
	if rm.Ino != n.ino || rm.Orphan != orphan {
		rt.Fatalf("removed %+v, model: ino %d orphan %v", rm, n.ino, orphan)
	}
	if orphan {
		if err := m.v.e.Purge(m.v.ctx, n.ino); err != nil {
			rt.Fatalf("purge: %v", err)
		}
	}
}

func (m *modelRun) rmdir(rt *rapid.T) {
	dir, name := m.drawDir(rt, "dir"), drawName(rt, "name")
	err := m.v.e.Rmdir(m.v.ctx, dir.ino, name)
	n := dir.kids[name]
	switch {
	case n == nil:
		same(rt, "rmdir", err, syscall.ENOENT)
	case n.typ != meta.TypeDir:
		same(rt, "rmdir", err, syscall.ENOTDIR)
	case len(n.kids) > 0:
		same(rt, "rmdir", err, syscall.ENOTEMPTY)
	default:
		same(rt, "rmdir", err, 0)
		delete(dir.kids, name)
	}
}

func (m *modelRun) link(rt *rapid.T) {
	f := m.drawFile(rt, "file")
	dir, name := m.drawDir(rt, "dir"), drawName(rt, "name")
	_, err := m.v.e.Link(m.v.ctx, f.ino, dir.ino, name)
	if dir.kids[name] != nil {
		same(rt, "link", err, syscall.EEXIST)
		return
	}
	same(rt, "link", err, 0)
	dir.kids[name] = f
	f.links++
}

// isUnder reports whether dir is n or inside n.
func isUnder(dir, n *mnode) bool {
	for d := dir; d != nil; d = d.parent {
		if d == n {
			return true
		}
	}
	return false
}

func (m *modelRun) rename(rt *rapid.T) {
	sd, sn := m.drawDir(rt, "srcDir"), drawName(rt, "srcName")
	dd, dn := m.drawDir(rt, "dstDir"), drawName(rt, "dstName")
	flags := rapid.SampledFrom([]uint32{0, 0, meta.RenameNoReplace, meta.RenameExchange}).Draw(rt, "flags")
	rm, err := m.v.e.Rename(m.v.ctx, meta.RenameRequest{OldParent: sd.ino, OldName: sn, NewParent: dd.ino, NewName: dn, Flags: flags})
	want := m.renameErrno(sd, sn, dd, dn, flags)
	same(rt, fmt.Sprintf("rename %s -> %s flags %d", sn, dn, flags), err, want)
	if err != nil {
		return
	}
	src, dst := sd.kids[sn], dd.kids[dn]
	switch {
	case src == dst:
	case flags == meta.RenameExchange:
		sd.kids[sn], dd.kids[dn] = dst, src
		setParent(src, dd)
		setParent(dst, sd)
	default:
		delete(sd.kids, sn)
		dd.kids[dn] = src
		setParent(src, dd)
		if dst != nil && dst.typ != meta.TypeDir {
			m.dropLink(rt, dst, rm)
		}
	}
}

func setParent(n, dir *mnode) {
	if n.typ == meta.TypeDir {
		n.parent = dir
	}
}

// renameErrno is rename(2)'s outcome on the model.
func (m *modelRun) renameErrno(sd *mnode, sn string, dd *mnode, dn string, flags uint32) syscall.Errno {
	src, dst := sd.kids[sn], dd.kids[dn]
	exchange := flags == meta.RenameExchange
	switch {
	case src == nil:
		return syscall.ENOENT
	case exchange && dst == nil:
		return syscall.ENOENT
	case flags == meta.RenameNoReplace && dst != nil:
		return syscall.EEXIST
	case src == dst:
		return 0
	case sd != dd && src.typ == meta.TypeDir && isUnder(dd, src):
		return syscall.EINVAL
	case sd != dd && dst != nil && dst.typ == meta.TypeDir && isUnder(sd, dst):
		if exchange {
			return syscall.EINVAL
		}
		return syscall.ENOTEMPTY
	case exchange || dst == nil:
		return 0
	case src.typ == meta.TypeDir && dst.typ != meta.TypeDir:
		return syscall.ENOTDIR
	case src.typ != meta.TypeDir && dst.typ == meta.TypeDir:
		return syscall.EISDIR
	case dst.typ == meta.TypeDir && len(dst.kids) > 0:
		return syscall.ENOTEMPTY
	}
	return 0
}

// checkTree compares the whole run directory with the model.
func (m *modelRun) checkTree(rt *rapid.T) {
	for _, n := range m.nodes(func(*mnode) bool { return true }) {
		a, err := m.v.e.Getattr(m.v.ctx, n.ino)
		if err != nil {
			rt.Fatalf("getattr %d: %v", n.ino, err)
		}
		if a.Type != n.typ || a.Nlink != n.nlink() {
			rt.Fatalf("inode %d: type %v nlink %d, model %v %d", n.ino, a.Type, a.Nlink, n.typ, n.nlink())
		}
		switch n.typ {
		case meta.TypeDir:
			m.checkDir(rt, n, a)
		case meta.TypeFile:
			m.checkData(rt, n, a)
		}
	}
}

func (n *mnode) nlink() uint32 {
	if n.typ != meta.TypeDir {
		return uint32(n.links)
	}
	links := uint32(2)
	for _, k := range n.kids {
		if k.typ == meta.TypeDir {
			links++
		}
	}
	return links
}

func (m *modelRun) checkDir(rt *rapid.T, n *mnode, a meta.Attr) {
	if n.parent != nil && a.Parent != n.parent.ino {
		rt.Fatalf("dir %d: parent %d, model %d", n.ino, a.Parent, n.parent.ino)
	}
	var ents []meta.DirEntry
	for after := ""; ; {
		page, err := m.v.e.Readdir(m.v.ctx, n.ino, after, 2, false)
		if err != nil {
			rt.Fatalf("readdir %d: %v", n.ino, err)
		}
		if len(page) == 0 {
			break
		}
		ents = append(ents, page...)
		after = page[len(page)-1].Name
	}
	names := sortedNames(n.kids)
	if len(ents) != len(names) {
		rt.Fatalf("dir %d: %d entries %v, model %v", n.ino, len(ents), ents, names)
	}
	for i, de := range ents {
		k := n.kids[de.Name]
		if de.Name != names[i] || k == nil || de.Ino != k.ino || de.Type != k.typ {
			rt.Fatalf("dir %d entry %d: %+v, model %q", n.ino, i, de, names[i])
		}
	}
}
