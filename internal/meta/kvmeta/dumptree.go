package kvmeta

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"syscall"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

var _ meta.TreeDumper = (*Engine)(nil)

// A tree dump (DumpTree) is the dump of a volume that holds only one tree
// of this one, in the format Dump writes and Restore reads: backups dump a
// snapshot's tree this way. Inode numbers are kept, except the top's,
// which becomes the root (meta.RootIno); entries of the top are entries of
// the root, and inodes whose parent was the top name the root. The
// snapshot marks (flagFrozen, and flagOpened, which only open records
// need) are cleared, so the restored tree is writable. Reference counts
// are counted again over the tree's own chunk records, and the counters
// are set for it alone: the next inode and slice past the largest used,
// usage recounted. Quotas, orphans, freed slices, snapshot records and
// clients' records stay behind.
//
// The tree is read a batch of directories, then a batch of inodes, per
// read transaction: consistent only for a tree nothing changes (a
// snapshot, which is frozen). Records are held per batch, then written.

// treeBatch is how many directories or inodes DumpTree reads per
// transaction.
const treeBatch = 256

// treeDumper is one DumpTree.
type treeDumper struct {
	e      *Engine
	top    meta.Ino
	enc    *json.Encoder
	inodes []meta.Ino // every inode found under top, top first
	seen   map[meta.Ino]bool
	refs   map[meta.SliceID]int64
	out    meta.TreeDump
	maxIno meta.Ino
	space  int64
}

// DumpTree implements meta.TreeDumper.
func (e *Engine) DumpTree(ctx context.Context, top meta.Ino, w io.Writer) (meta.TreeDump, error) {
	bw := bufio.NewWriter(w)
	d := &treeDumper{e: e, top: top, enc: json.NewEncoder(bw), seen: map[meta.Ino]bool{top: true},
		refs: map[meta.SliceID]int64{}, maxIno: meta.RootIno,
		out: meta.TreeDump{Slices: map[meta.SliceID]uint32{}}}
	err := d.run(ctx)
	if err == nil {
		err = bw.Flush()
	}
	return d.out, wrap(err, "dump tree %d", top)
}

func (d *treeDumper) run(ctx context.Context) error {
	if err := d.header(ctx); err != nil {
		return err
	}
	if err := d.entries(ctx); err != nil {
		return err
	}
	for rest := d.inodes; len(rest) > 0; {
		batch := rest[:min(treeBatch, len(rest))]
		rest = rest[len(batch):]
		if err := d.batch(ctx, batch); err != nil {
			return err
		}
	}
	return d.tail()
}

// header writes the dump header and the format record, after checking
// that top is a directory.
func (d *treeDumper) header(ctx context.Context) error {
	var raw []byte
	err := d.e.view(ctx, func(t *txn) error {
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
	if err := d.enc.Encode(dumpHeader{Dump: 1, Format: meta.CurrentFormatVersion, Source: d.e.Name()}); err != nil {
		return err
	}
	d.inodes = append(d.inodes, d.top)
	return d.put(formatKey(), formatWithoutCredentials(raw))
}

// put writes one record.
func (d *treeDumper) put(k, v []byte) error {
	return d.enc.Encode(dumpRecord{K: base64.StdEncoding.EncodeToString(k), V: base64.StdEncoding.EncodeToString(v)})
}

// to maps a source inode to its number in the dump.
func (d *treeDumper) to(ino meta.Ino) meta.Ino {
	if ino == d.top {
		return meta.RootIno
	}
	return ino
}

// entries walks the tree breadth first, writing every entry and listing
// every inode found.
func (d *treeDumper) entries(ctx context.Context) error {
	queue := []meta.Ino{d.top}
	for len(queue) > 0 {
		batch := queue[:min(treeBatch, len(queue))]
		queue = queue[len(batch):]
		var recs [][2][]byte
		var found, dirs []meta.Ino
		err := d.e.view(ctx, func(t *txn) error {
			recs, found, dirs = recs[:0], found[:0], dirs[:0]
			seen := map[meta.Ino]bool{}
			for _, dir := range batch {
				var failed error
				err := t.tx.Scan(inoKey(kindDentry, dir), nil, 0, func(k, v []byte) bool {
					ino, typ, err := decodeDentry(v)
					if err != nil {
						failed = err
						return false
					}
					if ino == meta.RootIno || ino == d.top {
						failed = fmt.Errorf("entry %q of directory %d names inode %d: not a tree of its own", k[kv.ScanPrefixLen:], dir, ino)
						return false
					}
					recs = append(recs, [2][]byte{dentryKey(d.to(dir), string(k[kv.ScanPrefixLen:])), append([]byte(nil), v...)})
					if !d.seen[ino] && !seen[ino] {
						seen[ino] = true
						found = append(found, ino)
						if typ == meta.TypeDir {
							dirs = append(dirs, ino)
						}
					}
					return true
				})
				if err = firstErr(failed, err); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := d.put(r[0], r[1]); err != nil {
				return err
			}
		}
		for _, ino := range found {
			d.seen[ino] = true
		}
		d.inodes = append(d.inodes, found...)
		queue = append(queue, dirs...)
	}
	return nil
}

// batch writes the records of some inodes: attributes, symlink target,
// xattrs and chunk records.
func (d *treeDumper) batch(ctx context.Context, inos []meta.Ino) error {
	var recs [][2][]byte
	add := func(k, v []byte) { recs = append(recs, [2][]byte{k, append([]byte(nil), v...)}) }
	var refs map[meta.SliceID]int64
	var sizes map[meta.SliceID]uint32
	var space, bytes int64
	err := d.e.view(ctx, func(t *txn) error {
		recs, refs, sizes, space, bytes = recs[:0], map[meta.SliceID]int64{}, map[meta.SliceID]uint32{}, 0, 0
		for _, ino := range inos {
			raw, err := t.tx.Get(attrKey(ino))
			if err != nil {
				return err
			}
			a, err := attrOf(raw)
			if err != nil {
				return fmt.Errorf("inode %d: %w", ino, err)
			}
			flags := attrFlags(raw) &^ (flagOpened | flagFrozen)
			a.Parent = d.to(a.Parent)
			if ino == d.top {
				a.Parent = meta.RootIno
			}
			add(attrKey(d.to(ino)), encodeAttrRecord(&a, flags, 0))
			space += spaceOf(&a)
			if a.Type == meta.TypeFile {
				bytes += int64(a.Length)
			}
			if err := d.inodeData(t, ino, &a, flags, add, refs, sizes); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := d.put(r[0], r[1]); err != nil {
			return err
		}
	}
	for id, n := range refs {
		d.refs[id] += n
		d.out.Slices[id] = sizes[id]
	}
	for _, ino := range inos {
		d.maxIno = max(d.maxIno, ino)
	}
	d.space += space
	d.out.Bytes += bytes
	d.out.Inodes += int64(len(inos))
	return nil
}

// inodeData adds what is keyed by ino besides its attributes.
func (d *treeDumper) inodeData(t *txn, ino meta.Ino, a *meta.Attr, flags byte, add func(k, v []byte),
	refs map[meta.SliceID]int64, sizes map[meta.SliceID]uint32) error {
	to := d.to(ino)
	switch a.Type {
	case meta.TypeSymlink:
		target, err := t.tx.Get(symlinkKey(ino))
		if err != nil {
			return err
		}
		if target != nil {
			add(symlinkKey(to), target)
		}
	case meta.TypeFile:
		var failed error
		err := t.tx.Scan(inoKey(kindChunk, ino), nil, 0, func(k, v []byte) bool {
			ss, err := decodeChunkValue(k, v)
			if err != nil {
				failed = err
				return false
			}
			for _, s := range ss {
				if s.ID != 0 {
					refs[s.ID]++
					sizes[s.ID] = s.Size
				}
			}
			add(append(inoKey(kindChunk, to), k[kv.ScanPrefixLen:]...), v)
			return true
		})
		if err = firstErr(failed, err); err != nil {
			return err
		}
	}
	if flags&flagXattrs == 0 {
		return nil
	}
	return t.tx.Scan(inoKey(kindXattr, ino), nil, 0, func(k, v []byte) bool {
		add(append(inoKey(kindXattr, to), k[kv.ScanPrefixLen:]...), v)
		return true
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

// DumpSlices reads a dump (Dump's or DumpTree's, uncompressed) and
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
