package kvmeta

import (
	"context"
	"fmt"
	"slices"
	"syscall"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// A tree copy (clones and snapshots) copies metadata only: every inode of
// the source tree gets a new inode number with the same attributes, entries,
// symlink target, xattrs and chunk records, and each slice the records name
// takes one more reference per record, as copy_file_range's do. No block is
// read or written, so a copy costs time in proportion to the number of
// inodes and slice records, not to the bytes they hold. Later writes to
// either side make new slices (blocks are immutable), which is the
// copy-on-write.
//
// The copy runs in one kv.Exclusive transaction: no other client commits a
// write while the tree is read, so the copy is the tree as it was at one
// instant, across every file in it — other clients' writes wait and then
// proceed. Hard links inside the tree stay hard links of one copied inode
// (its link count is the links found inside the tree); a name linking out
// of the tree is not followed.

// copyOpts says how a tree copy treats its inodes.
type copyOpts struct {
	// frozen marks every copy flagFrozen (a snapshot) and leaves usage
	// uncounted: a snapshot's files share their data with the volume.
	frozen bool
	// preserve keeps owners (a snapshot, or a clone by root); otherwise
	// the caller owns the copies, and setuid/setgid bits whose owner
	// changed go, as cp does.
	preserve bool
	// check: the caller must be able to read every file and list every
	// directory it copies (an untrusted clone).
	check bool
	// skipRoot lists names to leave out of the volume root's entries
	// (/.snapshots, /.trash) when the root is copied.
	skipRoot map[string]bool
}

// copier is one tree copy inside one transaction.
type copier struct {
	t    *txn
	o    copyOpts
	inos map[meta.Ino]meta.Ino // source inode → its copy
	// links counts the entries found of each copied non-directory;
	// subdirs the copied subdirectories of each copied directory.
	links   map[meta.Ino]uint32
	subdirs map[meta.Ino]uint32
	parent  map[meta.Ino]meta.Ino // copy → the copy of the directory it was found in
	refs    map[meta.SliceID]int64
	next    uint64 // inode numbers reserved in this transaction: [next, end)
	end     uint64
	inodes  int64 // inodes copied
	space   int64 // space of the files copied (spaceOf)
}

func newCopier(t *txn, o copyOpts) *copier {
	return &copier{t: t, o: o,
		inos:    make(map[meta.Ino]meta.Ino),
		links:   make(map[meta.Ino]uint32),
		subdirs: make(map[meta.Ino]uint32),
		parent:  make(map[meta.Ino]meta.Ino),
		refs:    make(map[meta.SliceID]int64),
	}
}

// copyBatch is how many inode numbers a copy reserves at a time.
const copyBatch = 1024

// alloc returns a fresh inode number, reserved from the volume's counter
// inside the copy's own transaction (an idPool's separate transaction
// would wait behind this exclusive one).
func (c *copier) alloc() (meta.Ino, error) {
	if c.next == c.end {
		raw, err := c.t.tx.Get(counterKey(counterNextInode))
		if err != nil {
			return 0, err
		}
		c.next = max(uint64(decodeInt(raw)), uint64(meta.RootIno)+1)
		c.end = c.next + copyBatch
		c.t.tx.Set(counterKey(counterNextInode), encodeInt(int64(c.end)))
	}
	ino := meta.Ino(c.next)
	c.next++
	return ino, nil
}

// copyTree copies the tree at src as a new inode whose entry the caller
// adds under dstParent; it returns the copy of src.
func (c *copier) copyTree(src, dstParent meta.Ino) (meta.Ino, error) {
	root, err := c.alloc()
	if err != nil {
		return 0, err
	}
	c.inos[src] = root
	c.parent[root] = dstParent
	c.links[src] = 1
	queue := []meta.Ino{src}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		a, err := c.t.attr(dir)
		if err != nil {
			return 0, err
		}
		if a.Type != meta.TypeDir {
			continue
		}
		if c.o.check {
			if err := c.t.access(dir, a, meta.MayRead|meta.MayExec); err != nil {
				return 0, err
			}
		}
		subdirs, err := c.copyEntries(dir)
		if err != nil {
			return 0, err
		}
		queue = append(queue, subdirs...)
	}
	if err := c.copyInodes(); err != nil {
		return 0, err
	}
	return root, c.takeRefs()
}

// copyEntries copies directory dir's entries (its copy exists) and
// returns the source subdirectories found, to be copied next.
func (c *copier) copyEntries(dir meta.Ino) ([]meta.Ino, error) {
	to := c.inos[dir]
	var subdirs []meta.Ino
	var failed error
	err := c.t.tx.Scan(inoKey(kindDentry, dir), nil, 0, func(k, v []byte) bool {
		name := string(k[kv.ScanPrefixLen:])
		if dir == meta.RootIno && c.o.skipRoot[name] {
			return true
		}
		ino, typ, err := decodeDentry(v)
		if err != nil {
			failed = err
			return false
		}
		cp, seen := c.inos[ino]
		if !seen {
			if cp, err = c.alloc(); err != nil {
				failed = err
				return false
			}
			c.inos[ino] = cp
			c.parent[cp] = to
			if typ == meta.TypeDir {
				subdirs = append(subdirs, ino)
			}
		}
		if typ == meta.TypeDir {
			c.subdirs[to]++
		}
		c.links[ino]++
		c.t.tx.Set(dentryKey(to, name), encodeDentry(cp, typ))
		return true
	})
	if failed != nil {
		return nil, failed
	}
	return subdirs, err
}

// copyInodes writes the copy of every inode found: attributes, symlink
// target, xattrs and chunk records. The inodes are read in runs of
// nearby numbers, one scan of attributes and one of chunk records per
// run, as tree dumps read them (dumptree.go).
func (c *copier) copyInodes() error {
	srcs := make([]meta.Ino, 0, len(c.inos))
	for src := range c.inos {
		srcs = append(srcs, src)
	}
	slices.Sort(srcs)
	for rest := srcs; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n]-rest[n-1] <= treeGap {
			n++
		}
		if err := c.copyRun(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// copyRun copies one run of sorted, nearby source inodes.
func (c *copier) copyRun(run []meta.Ino) error {
	var failed error
	var more []treeExtra
	got := 0
	err := scanInodes(c.t, kindAttr, run[0], run[len(run)-1], func(src meta.Ino, _, raw []byte) bool {
		cp, ok := c.inos[src]
		if !ok {
			return true
		}
		got++
		x, err := c.copyAttr(src, cp, raw)
		if err != nil {
			failed = err
			return false
		}
		if x.symlink || x.xattrs {
			more = append(more, x)
		}
		return true
	})
	if err = firstErr(failed, err); err != nil {
		return err
	}
	if got != len(run) {
		return fmt.Errorf("%d of inodes %d..%d found in the tree have no attributes: %w", len(run)-got, run[0], run[len(run)-1], syscall.ENOENT)
	}
	if err := c.copyChunks(run); err != nil {
		return err
	}
	for _, x := range more {
		if err := c.copyExtra(x); err != nil {
			return err
		}
	}
	return nil
}

// copyAttr writes the copy cp of src's attribute record raw, and says
// what else src has.
func (c *copier) copyAttr(src, cp meta.Ino, raw []byte) (treeExtra, error) {
	a, err := decodeAttr(raw)
	if err != nil {
		return treeExtra{}, fmt.Errorf("inode %d: %w", src, err)
	}
	if c.o.check && a.Type != meta.TypeDir {
		if err := c.t.access(src, &a, meta.MayRead); err != nil {
			return treeExtra{}, err
		}
	}
	flags := attrFlags(raw) &^ (flagOpened | flagFrozen | flagTrash)
	if a.Type == meta.TypeFile {
		c.space += spaceOf(&a)
	}
	c.adjust(src, cp, &a)
	if c.o.frozen {
		flags |= flagFrozen
	}
	c.t.tx.Set(attrKey(cp), encodeAttrRecord(&a, flags, 0))
	c.inodes++
	if !c.o.frozen {
		c.t.charge(a.Parent, spaceOf(&a), 1)
	}
	return treeExtra{ino: src, symlink: a.Type == meta.TypeSymlink, xattrs: flags&flagXattrs != 0}, nil
}

// copyChunks copies the chunk records of a run's inodes and counts their
// slices.
func (c *copier) copyChunks(run []meta.Ino) error {
	keep := func(ino meta.Ino) bool { _, ok := c.inos[ino]; return ok }
	return scanRunChunks(c.t, run, keep, func(src meta.Ino, k, v []byte, ss []meta.Slice) {
		for _, s := range ss {
			if s.ID != 0 {
				c.refs[s.ID]++
			}
		}
		c.t.tx.Set(append(inoKey(kindChunk, c.inos[src]), k[kv.ScanPrefixLen:]...), append([]byte(nil), v...))
	})
}

// copyExtra copies an inode's symlink target and xattrs.
func (c *copier) copyExtra(x treeExtra) error {
	cp := c.inos[x.ino]
	if x.symlink {
		target, err := c.t.tx.Get(symlinkKey(x.ino))
		if err != nil {
			return err
		}
		c.t.tx.Set(symlinkKey(cp), target)
	}
	if x.xattrs {
		return c.copyPrefix(kindXattr, x.ino, cp, nil)
	}
	return nil
}

// copyPrefix copies every key of kind under src to the same key under cp,
// calling each (when set) with the source key and value.
func (c *copier) copyPrefix(kind byte, src, cp meta.Ino, each func(k, v []byte) error) error {
	var failed error
	err := c.t.tx.Scan(inoKey(kind, src), nil, 0, func(k, v []byte) bool {
		if each != nil {
			if failed = each(k, v); failed != nil {
				return false
			}
		}
		nk := append(inoKey(kind, cp), k[kv.ScanPrefixLen:]...)
		c.t.tx.Set(nk, append([]byte(nil), v...))
		return true
	})
	if failed != nil {
		return failed
	}
	return err
}

// adjust sets a copy's link count, parent and (unless preserved) owner.
func (c *copier) adjust(src, cp meta.Ino, a *meta.Attr) {
	if a.Type == meta.TypeDir {
		a.Nlink = 2 + c.subdirs[cp]
	} else {
		a.Nlink = c.links[src]
	}
	a.Parent = c.parent[cp]
	if c.o.preserve {
		return
	}
	cred := c.t.cred
	if a.Uid != cred.Uid || a.Gid != cred.Gid {
		a.Mode &^= meta.ModeSetuid | meta.ModeSetgid
	}
	a.Uid, a.Gid = cred.Uid, cred.Gid
	a.Ctime = c.t.now
}

// takeRefs adds one reference per copied record to each slice.
func (c *copier) takeRefs() error {
	if len(c.refs) > 0 {
		if err := c.t.countCopy(); err != nil {
			return err
		}
	}
	return c.t.increfAll(c.refs)
}

// resolvePath walks path (slash-separated, relative to the root; "" or
// "/" is the root) inside t, as root.
func (t *txn) resolvePath(path string) (meta.Ino, error) {
	ino := meta.RootIno
	for _, name := range splitPath(path) {
		child, _, err := t.lookup(ino, name)
		if err != nil {
			return 0, err
		}
		ino = child
	}
	return ino, nil
}

// splitPath returns path's names, without empty ones and ".".
func splitPath(path string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			if name := path[start:i]; name != "" && name != "." {
				out = append(out, name)
			}
			start = i + 1
		}
	}
	return out
}

// Clone implements meta.Cloner.
func (e *Engine) Clone(ctx context.Context, req meta.CloneRequest) (meta.Entry, error) {
	if err := meta.CheckName(req.Name); err != nil {
		return meta.Entry{}, err
	}
	var out meta.Entry
	err := e.exclusive(ctx, func(t *txn) error {
		p, err := t.dirFor(req.Parent, meta.MayExec)
		if err != nil {
			return err
		}
		if _, _, err := t.lookup(req.Parent, req.Name); err == nil {
			return syscall.EEXIST
		} else if err != syscall.ENOENT {
			return err
		}
		if err := t.access(req.Parent, p, meta.MayWrite|meta.MayExec); err != nil {
			return err
		}
		src, err := t.attr(req.Src)
		if err != nil {
			return err
		}
		if src.Type == meta.TypeDir {
			inside, err := t.isAncestor(req.Src, req.Parent)
			if err != nil {
				return err
			}
			if inside {
				return syscall.EINVAL // a tree into itself
			}
		}
		// Only root keeps owners; anyone else must be able to read
		// what they copy, checked here even for a trusted caller (the
		// kernel checked the destination, not the tree).
		o := copyOpts{preserve: req.Preserve && t.cred.Uid == 0, check: t.cred.Uid != 0}
		if o.check {
			t.cred.Trusted = false
		}
		c := newCopier(t, o)
		ino, err := c.copyTree(req.Src, req.Parent)
		if err != nil {
			return err
		}
		t.tx.Set(dentryKey(req.Parent, req.Name), encodeDentry(ino, src.Type))
		if src.Type == meta.TypeDir {
			p.Nlink++
			t.touch(req.Parent)
		}
		t.touchDir(req.Parent, p)
		t.space += c.space
		t.files += c.inodes
		out.Ino = ino
		out.Attr, err = t.copiedAttr(ino)
		return err
	})
	return out, wrap(err, "clone %d to %d/%q", req.Src, req.Parent, req.Name)
}

// copiedAttr reads back a copy's attributes written in this transaction.
func (t *txn) copiedAttr(ino meta.Ino) (meta.Attr, error) {
	raw, err := t.tx.Get(attrKey(ino))
	if err != nil {
		return meta.Attr{}, err
	}
	return attrOf(raw)
}

// countCopy adds one to the copy counter (meta.CopyCounter): this
// transaction gives existing slices new holders.
func (t *txn) countCopy() error {
	raw, err := t.tx.Get(counterKey(counterCopies))
	if err != nil {
		return err
	}
	t.tx.Set(counterKey(counterCopies), encodeInt(decodeInt(raw)+1))
	return nil
}

// Copies implements meta.CopyCounter.
func (e *Engine) Copies(ctx context.Context) (uint64, error) {
	raw, err := kv.GetOne(ctx, e.store, counterKey(counterCopies))
	return uint64(decodeInt(raw)), wrap(err, "read the copy counter")
}
