package kvmeta

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"syscall"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

var _ meta.TreeDumper = (*Engine)(nil)

// A tree dump (DumpTree, DumpLive) is the dump of a volume that holds
// only one tree of this one, in the format Dump writes and Restore reads:
// backups dump a tree this way. Inode numbers are kept, except the top's,
// which becomes the root (meta.RootIno); entries of the top are entries
// of the root. Link counts and parents are those of a copy of the tree
// (clone.go): a directory counts the subdirectories written, another
// inode the entries written that name it, and its parent is the
// directory it was first found in. The marks of snapshots and the trash
// (flagFrozen, flagTrash) and flagOpened (which only open records need)
// are cleared, so the restored tree is writable. Reference counts are
// counted again over the tree's own chunk records, and the counters are
// set for it alone: the next inode and slice past the largest used, usage
// recounted. Quotas, orphans, freed slices, snapshot records and clients'
// records stay behind. A dump of the volume root leaves /.snapshots and
// /.trash out, as a snapshot does.
//
// DumpTree reads a snapshot's tree a batch of directories, then a batch
// of inodes, per read transaction: consistent only for a tree nothing
// changes (a snapshot, which is frozen). DumpLive reads a live tree in
// one consistent read (dumplive.go). Records are held per batch, then
// written.
//
// Reads: entries one ordered scan per directory; the inodes found are
// then sorted and read in runs of nearby inode numbers, one ordered scan
// of attributes and one of chunk records per run (treeGap), rather than
// one read per inode: a tree made together has nearby numbers, a
// snapshot's copies are numbered apart from the live tree. Symlink
// targets and xattrs (flagged inodes only) are read per inode.

// treeBatch is how many directories or inodes DumpTree reads per
// transaction.
const treeBatch = 1024

// treeGap is the widest gap between the inode numbers of one run: keys of
// the inodes in a gap are scanned and skipped, which costs less than a
// query per run.
const treeGap = 16

// treeNode is what a tree dump knows of an inode found in the tree.
type treeNode struct {
	parent meta.Ino // the directory it was first found in
	n      uint32   // a directory: its subdirectories; else its entries
}

// treeDumper is one DumpTree or DumpLive.
type treeDumper struct {
	e   *Engine
	top meta.Ino
	w   *bufio.Writer
	// read runs fn in a read transaction: a View per call for a
	// snapshot, the one transaction of a live dump.
	read     func(ctx context.Context, fn func(t *txn) error) error
	skipRoot bool                       // leave /.snapshots and /.trash out of the root
	direct   bool                       // read is one transaction: write records as read
	slice    func(meta.SliceID, uint32) // meta.LiveDump.Slice
	inodes   []meta.Ino                 // every inode found under top, top first
	nodes    map[meta.Ino]treeNode
	refs     map[meta.SliceID]int64
	out      meta.TreeDump
	maxIno   meta.Ino
	space    int64
	line     []byte // the record being written
}

func newTreeDumper(e *Engine, top meta.Ino, w io.Writer) *treeDumper {
	return &treeDumper{e: e, top: top, w: bufio.NewWriterSize(w, 256<<10), read: e.view,
		nodes: map[meta.Ino]treeNode{top: {parent: meta.RootIno}}, refs: map[meta.SliceID]int64{},
		maxIno: meta.RootIno, out: meta.TreeDump{Slices: map[meta.SliceID]uint32{}}}
}

// DumpTree implements meta.TreeDumper.
func (e *Engine) DumpTree(ctx context.Context, top meta.Ino, w io.Writer) (meta.TreeDump, error) {
	d := newTreeDumper(e, top, w)
	err := d.run(ctx)
	return d.out, wrap(err, "dump tree %d", top)
}

func (d *treeDumper) run(ctx context.Context) error {
	if err := d.header(ctx); err != nil {
		return err
	}
	if err := d.entries(ctx); err != nil {
		return err
	}
	inos := slices.Clone(d.inodes)
	slices.Sort(inos)
	for len(inos) > 0 {
		batch := inos[:min(treeBatch, len(inos))]
		inos = inos[len(batch):]
		if err := d.batch(ctx, batch); err != nil {
			return err
		}
	}
	if err := d.tail(); err != nil {
		return err
	}
	return d.w.Flush()
}

// header writes the dump header and the format record, after checking
// that top is a directory.
func (d *treeDumper) header(ctx context.Context) error {
	var raw []byte
	err := d.read(ctx, func(t *txn) error {
		a, err := t.attr(d.top)
		if err != nil {
			return err
		}
		if a.Type != meta.TypeDir {
			return syscall.ENOTDIR
		}
		raw, err = t.tx.Get(formatKey())
		return err
	})
	if err != nil {
		return err
	}
	if raw == nil {
		return meta.ErrNotFormatted
	}
	hdr, err := json.Marshal(dumpHeader{Dump: 1, Format: meta.CurrentFormatVersion, Source: d.e.Name()})
	if err != nil {
		return err
	}
	if _, err := d.w.Write(append(hdr, '\n')); err != nil {
		return err
	}
	d.inodes = append(d.inodes, d.top)
	return d.put(formatKey(), formatWithoutCredentials(raw))
}

// put writes one record, as json.Encoder writes a dumpRecord (base64
// needs no JSON escaping).
func (d *treeDumper) put(k, v []byte) error {
	b := append(d.line[:0], `{"k":"`...)
	b = base64.StdEncoding.AppendEncode(b, k)
	b = append(b, `","v":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	b = append(b, "\"}\n"...)
	d.line = b
	_, err := d.w.Write(b)
	return err
}

// to maps a source inode to its number in the dump.
func (d *treeDumper) to(ino meta.Ino) meta.Ino {
	if ino == d.top {
		return meta.RootIno
	}
	return ino
}

// treeEntry is one directory entry read.
type treeEntry struct {
	dir, ino meta.Ino
	typ      meta.Type
	name     string
	val      []byte
}

// entries walks the tree breadth first, writing every entry and listing
// every inode found.
func (d *treeDumper) entries(ctx context.Context) error {
	queue := []meta.Ino{d.top}
	for len(queue) > 0 {
		batch := queue[:min(treeBatch, len(queue))]
		queue = queue[len(batch):]
		var ents []treeEntry
		err := d.read(ctx, func(t *txn) error {
			ents = ents[:0]
			for _, dir := range batch {
				var err error
				if ents, err = d.scanDir(t, dir, ents); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, en := range ents {
			if err := d.put(dentryKey(d.to(en.dir), en.name), en.val); err != nil {
				return err
			}
			if d.found(en) {
				queue = append(queue, en.ino)
			}
		}
	}
	return nil
}

// scanDir appends directory dir's entries to ents.
func (d *treeDumper) scanDir(t *txn, dir meta.Ino, ents []treeEntry) ([]treeEntry, error) {
	var failed error
	err := t.tx.Scan(inoKey(kindDentry, dir), nil, 0, func(k, v []byte) bool {
		name := string(k[kv.ScanPrefixLen:])
		if d.skipRoot && dir == meta.RootIno && (name == SnapshotDir || name == trashDir) {
			return true
		}
		ino, typ, err := decodeDentry(v)
		if err != nil {
			failed = err
			return false
		}
		if ino == meta.RootIno || ino == d.top {
			failed = fmt.Errorf("entry %q of directory %d names inode %d: not a tree of its own", name, dir, ino)
			return false
		}
		ents = append(ents, treeEntry{dir: dir, ino: ino, typ: typ, name: name, val: append([]byte(nil), v...)})
		return true
	})
	return ents, firstErr(failed, err)
}

// found counts entry en and reports whether it names a directory not
// found before, whose entries are to be read.
func (d *treeDumper) found(en treeEntry) bool {
	node, seen := d.nodes[en.ino]
	if !seen {
		node.parent = en.dir
		d.inodes = append(d.inodes, en.ino)
	}
	if en.typ == meta.TypeDir {
		p := d.nodes[en.dir]
		p.n++
		d.nodes[en.dir] = p
	} else {
		node.n++
	}
	d.nodes[en.ino] = node
	return !seen && en.typ == meta.TypeDir
}

// treeBatchOut is what one batch of inodes read.
type treeBatchOut struct {
	recs  [][2][]byte
	refs  map[meta.SliceID]int64
	sizes map[meta.SliceID]uint32
	space int64
	bytes int64
	// put, when set (a live dump: one transaction, no retry of a
	// batch), writes records at once instead of holding them.
	put func(k, v []byte) error
	err error
}

func (o *treeBatchOut) add(k, v []byte) {
	if o.put != nil {
		if err := o.put(k, v); err != nil && o.err == nil {
			o.err = err
		}
		return
	}
	o.recs = append(o.recs, [2][]byte{k, append([]byte(nil), v...)})
}

// batch writes the records of some inodes, sorted: attributes, symlink
// target, xattrs and chunk records.
func (d *treeDumper) batch(ctx context.Context, inos []meta.Ino) error {
	var o *treeBatchOut
	err := d.read(ctx, func(t *txn) error {
		o = &treeBatchOut{refs: map[meta.SliceID]int64{}, sizes: map[meta.SliceID]uint32{}}
		if d.direct {
			o.put = d.put
		}
		for rest := inos; len(rest) > 0; {
			n := 1
			for n < len(rest) && rest[n]-rest[n-1] <= treeGap {
				n++
			}
			if err := d.run1(t, rest[:n], o); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err = firstErr(err, o.err); err != nil {
		return err
	}
	for _, r := range o.recs {
		if err := d.put(r[0], r[1]); err != nil {
			return err
		}
	}
	for id, n := range o.refs {
		d.refs[id] += n
		d.out.Slices[id] = o.sizes[id]
	}
	d.maxIno = max(d.maxIno, inos[len(inos)-1])
	d.space += o.space
	d.out.Bytes += o.bytes
	d.out.Inodes += int64(len(inos))
	return nil
}

// run1 reads one run of sorted, nearby inodes: their attributes in one
// scan, their chunk records in another, and per inode what else it has.
func (d *treeDumper) run1(t *txn, run []meta.Ino, o *treeBatchOut) error {
	var failed error
	var more []treeExtra
	var got int
	err := scanInodes(t, kindAttr, run[0], run[len(run)-1], func(ino meta.Ino, _, v []byte) bool {
		node, ok := d.nodes[ino]
		if !ok {
			return true // in a gap of the run
		}
		got++
		a, err := decodeAttr(v)
		if err != nil {
			failed = fmt.Errorf("inode %d: %w", ino, err)
			return false
		}
		flags := attrFlags(v) &^ (flagOpened | flagFrozen | flagTrash)
		d.adjust(ino, node, &a)
		o.add(attrKey(d.to(ino)), encodeAttrRecord(&a, flags, 0))
		o.space += spaceOf(&a)
		if a.Type == meta.TypeFile {
			o.bytes += int64(a.Length)
		}
		if x := (treeExtra{ino, a.Type == meta.TypeSymlink, flags&flagXattrs != 0}); x.symlink || x.xattrs {
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
	if err := d.chunks(t, run, o); err != nil {
		return err
	}
	for _, x := range more {
		if err := d.extra(t, x, o); err != nil {
			return err
		}
	}
	return nil
}

// treeExtra is an inode with records besides attributes and chunks.
type treeExtra struct {
	ino             meta.Ino
	symlink, xattrs bool
}

// adjust sets the link count and parent a copy of the tree gives ino.
func (d *treeDumper) adjust(ino meta.Ino, node treeNode, a *meta.Attr) {
	if a.Type == meta.TypeDir {
		a.Nlink = 2 + node.n
	} else {
		a.Nlink = node.n
	}
	a.Parent = d.to(node.parent)
	if ino == d.top {
		a.Parent = meta.RootIno
	}
}

// chunks adds the chunk records of a run's inodes and counts their slices.
func (d *treeDumper) chunks(t *txn, run []meta.Ino, o *treeBatchOut) error {
	keep := func(ino meta.Ino) bool { _, ok := d.nodes[ino]; return ok }
	return scanRunChunks(t, run, keep, func(ino meta.Ino, k, v []byte, ss []meta.Slice) {
		for _, s := range ss {
			if s.ID != 0 {
				o.refs[s.ID]++
				o.sizes[s.ID] = s.Size
				if d.slice != nil {
					d.slice(s.ID, s.Size)
				}
			}
		}
		o.add(append(inoKey(kindChunk, d.to(ino)), k[kv.ScanPrefixLen:]...), v)
	})
}

// scanRunChunks calls fn with every chunk record of the run's inodes that
// keep accepts, decoded, stopping at the first record that does not
// decode.
func scanRunChunks(t *txn, run []meta.Ino, keep func(meta.Ino) bool, fn func(ino meta.Ino, k, v []byte, ss []meta.Slice)) error {
	var failed error
	err := scanInodes(t, kindChunk, run[0], run[len(run)-1], func(ino meta.Ino, k, v []byte) bool {
		if !keep(ino) {
			return true
		}
		ss, err := decodeChunkValue(k, v)
		if err != nil {
			failed = err
			return false
		}
		fn(ino, k, v, ss)
		return true
	})
	return firstErr(failed, err)
}

// extra adds an inode's symlink target and xattrs.
func (d *treeDumper) extra(t *txn, x treeExtra, o *treeBatchOut) error {
	to := d.to(x.ino)
	if x.symlink {
		target, err := t.tx.Get(symlinkKey(x.ino))
		if err != nil {
			return err
		}
		if target != nil {
			o.add(symlinkKey(to), target)
		}
	}
	if !x.xattrs {
		return nil
	}
	return t.tx.Scan(inoKey(kindXattr, x.ino), nil, 0, func(k, v []byte) bool {
		o.add(append(inoKey(kindXattr, to), k[kv.ScanPrefixLen:]...), v)
		return true
	})
}

// scanInodes calls fn, in key order, for every key of kind whose inode
// number (the 8 bytes after the kind) is in [from, to], until fn returns
// false: one ordered scan of the kind.
func scanInodes(t *txn, kind byte, from, to meta.Ino, fn func(ino meta.Ino, k, v []byte) bool) error {
	// Keys of inode from-1 are at most kind, 8 bytes, 8 more: start
	// after the greatest of them.
	after := be.AppendUint64(nil, uint64(from-1))
	after = append(after, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	return t.tx.Scan([]byte{kind}, after, 0, func(k, v []byte) bool {
		if len(k) < kv.ScanPrefixLen {
			return true
		}
		ino := meta.Ino(be.Uint64(k[1:]))
		if ino > to {
			return false
		}
		return fn(ino, k, v)
	})
}

// tail writes the reference counts above one and the counters.
func (d *treeDumper) tail() error {
	var maxSlice meta.SliceID
	for id, n := range d.refs {
		maxSlice = max(maxSlice, id)
		if n > 1 {
			if err := d.put(sliceKey(kindRefs, id), encodeInt(n)); err != nil {
				return err
			}
		}
	}
	counters := []struct {
		name string
		v    int64
	}{
		{counterNextInode, int64(d.maxIno) + 1},
		{counterNextSlice, int64(maxSlice) + 1},
		{counterUsedSpace, d.space},
		{counterUsedInodes, d.out.Inodes},
	}
	for _, c := range counters {
		if err := d.put(counterKey(c.name), encodeInt(c.v)); err != nil {
			return err
		}
	}
	return nil
}

// DumpSlices reads a dump (Dump's or a tree dump, uncompressed) and
// returns the volume settings it carries and the slices its chunk
// records name, with their sizes: what a backup needs to find the block
// objects a dump refers to without restoring it.
func DumpSlices(r io.Reader) (meta.Format, map[meta.SliceID]uint32, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var hdr dumpHeader
	if err := dec.Decode(&hdr); err != nil || hdr.Dump != 1 {
		return meta.Format{}, nil, fmt.Errorf("not a shoal dump (header %+v): %v", hdr, err)
	}
	var f meta.Format
	var haveFormat bool
	slices := map[meta.SliceID]uint32{}
	for {
		k, v, err := nextRecord(dec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return f, nil, fmt.Errorf("reading the dump: %w", err)
		}
		switch k[0] {
		case kindFormat:
			if err := json.Unmarshal(v, &f); err != nil {
				return f, nil, fmt.Errorf("the dump's format record: %w", err)
			}
			haveFormat = true
		case kindChunk:
			ss, err := decodeChunkValue(k, v)
			if err != nil {
				return f, nil, fmt.Errorf("the dump is damaged: %w", err)
			}
			for _, s := range ss {
				if s.ID != 0 {
					slices[s.ID] = s.Size
				}
			}
		}
	}
	if !haveFormat {
		return f, nil, fmt.Errorf("the dump has no format record")
	}
	return f, slices, nil
}
