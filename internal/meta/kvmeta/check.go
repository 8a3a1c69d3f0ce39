package kvmeta

import (
	"context"
	"fmt"
	"sort"

	"shoal/internal/meta"
)

// Check is fsck for the metadata. It reads the whole volume in one read
// transaction into memory (about 100 bytes per inode and per entry), then
// derives what every stored fact should be from the facts that are the
// source of truth:
//
//   - directory entries are the truth for link counts, directory parents
//     and reachability; an entry whose parent is not a directory or whose
//     inode is missing is dropped;
//   - chunk records are the truth for slice reference counts;
//   - the inodes are the truth for the usage counters;
//   - the live sessions are the truth for open records: those of ended
//     sessions or deleted inodes go, and an orphan that its ended maker
//     left and no live session holds open is purged.
//
// With repair, the fixes run in one read-write transaction afterwards. A
// mounted client could change things in between, so repair is for a volume
// nobody has mounted; a plain check is safe at any time, though it may
// report changes that raced with it.
func (e *Engine) Check(ctx context.Context, repair bool) (meta.CheckReport, error) {
	if err := e.flushUsage(ctx); err != nil {
		return meta.CheckReport{}, err
	}
	var vs *volumeScan
	err := e.view(ctx, func(t *txn) error {
		var err error
		vs, err = scanVolume(t)
		return err
	})
	if err != nil {
		return meta.CheckReport{}, wrap(err, "check")
	}
	c := &checker{vs: vs}
	c.run()
	if repair && len(c.fixes) > 0 {
		err = e.update(ctx, func(t *txn) error {
			for _, fix := range c.fixes {
				if err := fix(t); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return c.report, wrap(err, "check repair")
		}
		c.report.Repaired = len(c.fixes)
	}
	return c.report, nil
}

// entry is one directory entry as found.
type entry struct {
	parent meta.Ino
	name   string
	ino    meta.Ino
	typ    meta.Type
}

// volumeScan is everything Check reads.
type volumeScan struct {
	attrs    map[meta.Ino]meta.Attr
	flags    map[meta.Ino]byte // attr record flags, when set
	xattrs   map[meta.Ino]bool // inodes with xattr keys
	entries  []entry
	symlinks map[meta.Ino]bool
	orphans  map[meta.Ino]meta.SessionID
	chunks   map[meta.Ino][]chunkRecord
	refs     map[meta.SliceID]int64 // stored 'K' values
	freed    map[meta.SliceID]bool
	space    int64
	files    int64

	sessions    map[meta.SessionID]bool
	orphanIndex []sessionInode // 'o' keys
	lockIndex   []sessionInode // 'q' keys
	opens       []sessionInode // 'H' keys
	lockInos    map[meta.Ino]bool
}

// sessionInode is one entry of a session index.
type sessionInode struct {
	session meta.SessionID
	ino     meta.Ino
}

// scanSessions reads the session keys, their indexes and which inodes
// have lock records.
func (vs *volumeScan) scanSessions(t *txn) error {
	vs.sessions, vs.lockInos = map[meta.SessionID]bool{}, map[meta.Ino]bool{}
	index := func(list *[]sessionInode) func(k, _ []byte) bool {
		return func(k, _ []byte) bool {
			*list = append(*list, sessionInode{meta.SessionID(be.Uint64(k[1:])), meta.Ino(be.Uint64(k[9:]))})
			return true
		}
	}
	scans := []struct {
		kind byte
		fn   func(k, v []byte) bool
	}{
		{kindSession, func(k, _ []byte) bool { vs.sessions[meta.SessionID(be.Uint64(k[1:]))] = true; return true }},
		{kindSessionOrphan, index(&vs.orphanIndex)},
		{kindSessionLock, index(&vs.lockIndex)},
		{kindOpen, func(k, _ []byte) bool {
			if len(k) == 17 {
				vs.opens = append(vs.opens, sessionInode{meta.SessionID(be.Uint64(k[9:])), meta.Ino(be.Uint64(k[1:]))})
			}
			return true
		}},
		{kindFlock, func(k, _ []byte) bool { vs.lockInos[meta.Ino(be.Uint64(k[1:]))] = true; return true }},
		{kindPlock, func(k, _ []byte) bool { vs.lockInos[meta.Ino(be.Uint64(k[1:]))] = true; return true }},
	}
	for _, s := range scans {
		if err := t.tx.Scan([]byte{s.kind}, nil, 0, s.fn); err != nil {
			return err
		}
	}
	return nil
}

// chunkRecord is one chunk key's records while scanning (order: see
// chunkKeyOrder) and, after mergeChunks, one chunk's whole list.
type chunkRecord struct {
	index  uint32
	order  int64
	slices []meta.Slice
}

// mergeChunks puts each file's chunk keys in key order and joins the keys
// of one chunk into its list (a whole-volume scan need not be ordered).
func (vs *volumeScan) mergeChunks() {
	for ino, recs := range vs.chunks {
		sort.Slice(recs, func(i, j int) bool {
			if recs[i].index != recs[j].index {
				return recs[i].index < recs[j].index
			}
			return recs[i].order < recs[j].order
		})
		merged := recs[:0]
		for _, r := range recs {
			if n := len(merged); n > 0 && merged[n-1].index == r.index {
				merged[n-1].slices = append(merged[n-1].slices, r.slices...)
				continue
			}
			merged = append(merged, r)
		}
		vs.chunks[ino] = merged
	}
}

// scanVolume reads every key kind Check needs.
func scanVolume(t *txn) (*volumeScan, error) {
	vs := &volumeScan{
		attrs: map[meta.Ino]meta.Attr{}, symlinks: map[meta.Ino]bool{}, orphans: map[meta.Ino]meta.SessionID{},
		chunks: map[meta.Ino][]chunkRecord{}, refs: map[meta.SliceID]int64{}, freed: map[meta.SliceID]bool{},
		flags: map[meta.Ino]byte{}, xattrs: map[meta.Ino]bool{},
	}
	var derr error
	keep := func(err error) bool {
		if err != nil && derr == nil {
			derr = err
		}
		return derr == nil
	}
	scans := []struct {
		kind byte
		fn   func(k, v []byte) bool
	}{
		{kindAttr, func(k, v []byte) bool {
			a, err := decodeAttr(v)
			ino := meta.Ino(be.Uint64(k[1:]))
			vs.attrs[ino] = a
			if f := attrFlags(v); f != 0 {
				vs.flags[ino] = f
			}
			return keep(err)
		}},
		{kindXattr, func(k, _ []byte) bool { vs.xattrs[meta.Ino(be.Uint64(k[1:]))] = true; return true }},
		{kindDentry, func(k, v []byte) bool {
			ino, typ, err := decodeDentry(v)
			vs.entries = append(vs.entries, entry{meta.Ino(be.Uint64(k[1:])), string(k[9:]), ino, typ})
			return keep(err)
		}},
		{kindSymlink, func(k, _ []byte) bool { vs.symlinks[meta.Ino(be.Uint64(k[1:]))] = true; return true }},
		{kindOrphan, func(k, v []byte) bool {
			vs.orphans[meta.Ino(be.Uint64(k[1:]))], _ = decodeOrphan(v)
			return true
		}},
		{kindChunk, func(k, v []byte) bool {
			ss, err := decodeChunkValue(k, v)
			if err != nil {
				return keep(err)
			}
			ino := meta.Ino(be.Uint64(k[1:]))
			vs.chunks[ino] = append(vs.chunks[ino], chunkRecord{chunkIndex(k), chunkKeyOrder(k), ss})
			return true
		}},
		{kindRefs, func(k, v []byte) bool { vs.refs[meta.SliceID(be.Uint64(k[1:]))] = decodeInt(v); return true }},
		{kindFreed, func(k, _ []byte) bool { vs.freed[meta.SliceID(be.Uint64(k[1:]))] = true; return true }},
	}
	for _, s := range scans {
		if err := t.tx.Scan([]byte{s.kind}, nil, 0, s.fn); err != nil {
			return nil, err
		}
	}
	if err := vs.scanSessions(t); err != nil {
		return nil, err
	}
	vs.mergeChunks()
	sort.Slice(vs.entries, func(i, j int) bool { return vs.entries[i].ino < vs.entries[j].ino })
	return vs, firstErr(derr, vs.readCounters(t))
}

func (vs *volumeScan) readCounters(t *txn) error {
	space, err := t.tx.Get(counterKey(counterUsedSpace))
	if err != nil {
		return err
	}
	files, err := t.tx.Get(counterKey(counterUsedInodes))
	vs.space, vs.files = decodeInt(space), decodeInt(files)
	return err
}

// checker derives problems and fixes from a volumeScan.
type checker struct {
	vs     *volumeScan
	report meta.CheckReport
	fixes  []func(t *txn) error
}

func (c *checker) problem(fix func(t *txn) error, format string, args ...any) {
	c.report.Problems = append(c.report.Problems, fmt.Sprintf(format, args...))
	if fix != nil {
		c.fixes = append(c.fixes, fix)
	}
}

func (c *checker) run() {
	if a, ok := c.vs.attrs[meta.RootIno]; !ok || a.Type != meta.TypeDir {
		c.problem(nil, "root directory missing or not a directory")
	}
	links, subdirs, parents := c.checkEntries()
	c.checkInodes(links, subdirs, parents)
	c.checkSlices()
	c.checkXattrs()
	c.checkSessions()
	c.checkOpens()
	c.checkCounters()
}
