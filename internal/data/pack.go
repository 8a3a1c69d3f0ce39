package data

import (
	"errors"
	"fmt"
	"io"

	"shoal/internal/meta"
)

// Packing small slices.
//
// A random 4 KiB write (a VM guest's, a database's) becomes a slice of
// its own, and storing each in an object of its own costs an object Put
// (a file create, write, fsync and rename on the file store; a request on
// S3) per write: that, not the copying, bounded small random writes to a
// tenth of the local disk. So a frozen slice that is small and still
// wholly in memory joins the writer's open pack instead of uploading: the
// pack's members are stored back to back as ONE object (block 0 of the
// pack's slice id, at most BlockSize long) and each member is committed
// as a record {ID: pack id, Size: pack size, Off: its offset, Len, Pos},
// exactly like a piece of a cloned slice. A small pack's object may be
// padded with zeros up to a size class, so that it can take a name the
// file store prepared ahead (named.go): Size is then the padded size,
// which no record's Off+Len reaches. The first committed record of a
// pack holds the id's implicit reference, every later one takes a
// reference of its own (meta.SliceWrite.Shared), so the object is freed
// with its last record and compaction, truncation and gc need nothing new.
//
// A pack is sealed (uploaded) when the next member would not fit, or as
// soon as the oldest uncommitted slice is one of its members, so packing
// never delays a commit that could otherwise happen: a Flush, the idle
// timer or a full write buffer freezes slices, they pack, and the pack
// uploads at once.

// packMax is the largest slice that is packed; larger ones fill blocks
// well enough on their own.
const packMax = 256 << 10

// maxPackMembers bounds a pack's members (and so a commit's records from
// one object).
const maxPackMembers = 1024

// pack is a group of small slices stored as one object.
type pack struct {
	members   []*slice
	size      int  // bytes: the members' lengths summed
	obj       int  // bytes of its object, set before its first upload: size, or size padded to its class (named.go)
	sealed    bool // takes no more members; uploading or stored
	uploading bool
	stored    bool
	err       error // upload failed for good; retried by retryFailed
	refs      int   // records committed so far
	id        meta.SliceID
}

// packable reports whether frozen slice s joins a pack. Called with w.mu
// held.
func (w *Writer) packable(s *slice) bool {
	return !w.noPack && s.sealed == 0 && s.length > 0 && s.length <= packMax &&
		len(s.blocks) == 1
}

// packSlice adds s to the open pack, sealing a full one first. s's block 0
// is immutable from here on (it counts as sealed) and s waits for the
// pack's upload (pending). Called with w.mu held.
func (w *Writer) packSlice(s *slice) {
	p := w.open
	if p != nil && (p.size+int(s.length) > w.s.cfg.BlockSize || len(p.members) >= maxPackMembers) {
		w.sealPack(p)
		p = nil
	}
	if p == nil {
		p = &pack{}
		w.open = p
	}
	s.pack, s.off = p, uint32(p.size)
	s.sealed = 1
	s.pending++
	p.members = append(p.members, s)
	p.size += int(s.length)
}

// sealPack closes p to new members and starts its upload. Called with
// w.mu held.
func (w *Writer) sealPack(p *pack) {
	if w.open == p {
		w.open = nil
	}
	p.sealed = true
	w.startPackUpload(p)
}

// sealHeadPack seals the open pack if the oldest uncommitted slice waits
// for it. Called with w.mu held.
func (w *Writer) sealHeadPack() {
	if len(w.queue) > 0 && w.open != nil && w.queue[0].pack == w.open {
		w.sealPack(w.open)
	}
}

// startPackUpload uploads p in the background; its members' pages are
// immutable meanwhile. Called with w.mu held.
func (w *Writer) startPackUpload(p *pack) {
	if p.err != nil {
		p.err = nil
		w.failures--
	}
	gen := w.gen
	w.s.buf.uploading(1)
	if !w.s.spawn(func() { w.uploadPack(p, gen) }) {
		w.s.buf.uploading(-1)
		p.err = fmt.Errorf("put pack of inode %d: %w", w.ino, errStoreClosed)
		w.failures++
		return
	}
	p.uploading = true
	for _, m := range p.members {
		m.blocks[0].uploading = true
	}
	w.uploading++
}

// uploadPack stores p's members as one object and records the outcome.
// If that makes the head of the queue ready, this goroutine commits it
// (claimCommit).
func (w *Writer) uploadPack(p *pack, gen uint64) {
	var err error
	named := false
	if p.id == 0 {
		p.id, p.obj = w.s.takeNamed(p.size)
		named = p.id != 0
	}
	if named && w.gatedPut(p, gen) {
		return
	}
	if p.id == 0 {
		p.id, err = w.newID(w.s.ctx)
		if err == nil && p.id == 0 {
			err = errors.New("got slice id 0")
		}
		if err != nil {
			p.id = 0
			err = fmt.Errorf("data: new slice id for inode %d: %w", w.ino, err)
		}
	}
	if err == nil {
		// Packs bypass the page cache like whole blocks: written through
		// it, a guest's parallel random writes fell from 31,000–42,000 to
		// 28,000–29,000 IOPS (the copy, and the writeback its fsync waits
		// for), more than reads of them gained.
		err = w.s.put(BlockKey(p.id, 0, p.obj), func() io.Reader { return w.packReader(p) }, p.obj, false)
	}
	if w.packUploaded(p, gen, err) {
		w.commitLoop()
	}
}

// packUploaded records the outcome of p's upload and reports whether the
// caller is to run commitLoop (claimCommit).
func (w *Writer) packUploaded(p *pack, gen uint64, err error) (commit bool) {
	defer w.s.buf.uploading(-1)
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.notify()
	return w.packDone(p, gen, err) && w.claimCommit()
}

// packDone records the outcome of p's upload and reports whether p is
// stored. The caller notifies waiters. Called with w.mu held.
func (w *Writer) packDone(p *pack, gen uint64, err error) (stored bool) {
	p.uploading = false
	for _, m := range p.members {
		m.blocks[0].uploading = false
	}
	w.uploading--
	switch {
	case err != nil && !w.closed && gen != w.gen:
		w.startPackUpload(p) // a retry was asked for while this ran
	case err != nil && !w.closed:
		p.err = err
		w.failures++
		w.s.log.Error("data: pack upload failed", "ino", w.ino, "err", err)
	case err != nil: // closed: Close abandoned the data
		for _, m := range p.members {
			w.s.putPages(m.blocks[0].pages)
			m.blocks[0].pages = nil
		}
	default:
		p.stored = true
		for _, m := range p.members {
			m.idMu.Lock()
			m.id = p.id
			m.idMu.Unlock()
			w.stored(m, m.blocks[0])
		}
		return true
	}
	return false
}

// packReader returns a reader of p's object bytes: each member's bytes in
// turn, straight from its pages, then the zeros that pad it to its
// object's size.
func (w *Writer) packReader(p *pack) io.ReadSeeker {
	var segs [][]byte
	for _, m := range p.members {
		left := int(m.length)
		for _, page := range m.blocks[0].pages {
			if left == 0 {
				break
			}
			n := min(left, len(page))
			segs = append(segs, page[:n])
			left -= n
		}
	}
	if pad := p.obj - p.size; pad > 0 {
		segs = append(segs, zeroPad[:pad])
	}
	return &segReader{segs: segs, size: int64(p.obj)}
}

// zeroPad is what pads a pack to its class (less than namedStep bytes);
// never written to.
var zeroPad [namedStep]byte

// segReader reads the concatenation of byte segments. It implements
// io.Seeker (from the start) so a retrying store can replay it.
type segReader struct {
	segs [][]byte
	size int64
	seg  int // current segment
	at   int // offset in it
	pos  int64
}

func (r *segReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.seg < len(r.segs) {
		c := copy(p[n:], r.segs[r.seg][r.at:])
		n += c
		r.at += c
		if r.at == len(r.segs[r.seg]) {
			r.seg, r.at = r.seg+1, 0
		}
	}
	r.pos += int64(n)
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Seek supports what replaying needs: the current position and a rewind.
func (r *segReader) Seek(off int64, whence int) (int64, error) {
	switch {
	case whence == io.SeekCurrent && off == 0:
		return r.pos, nil
	case whence == io.SeekStart && off == 0:
		r.seg, r.at, r.pos = 0, 0, 0
		return 0, nil
	}
	return r.pos, fmt.Errorf("data: pack reader cannot seek to %d (whence %d)", off, whence)
}
