package journal

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// allocStep is how far ahead of the records a segment's file is
// allocated (fallocate) for writing through its mapping.
const allocStep = 4 << 20

// mapSize is the size of a segment's mapping (address space only: the
// file is allocated as records come). A segment grows past the segment
// size while the flush that lets the journal drop the older ones runs
// (one at a time), by whatever is written meanwhile: at 100 MiB/s and a
// flush of a second, a hundred MiB or more. The 2 MiB are for the record
// that crosses the size (a write of up to 1 MiB).
func mapSize(segmentSize int64) int64 { return 4*segmentSize + 2<<20 }

// spareName is the file of the segment kept for reuse: not a segment
// name, so Recover never reads it.
const spareName = "spare"

// segment is an open segment file that records are appended to.
//
// Records are copied into a shared mapping of the file, which is the
// kernel's page cache itself: once the copy is done the bytes outlive the
// process exactly as those of a write(2) would, without a system call per
// record. The file is allocated ahead of the records in steps of
// allocStep with fallocate, so that a store through the mapping never
// needs a block the file system cannot give (which would be SIGBUS, not
// an error); where fallocate fails (a full or unsupporting file system),
// and past the mapping's end, records are written with pwritev.
//
// A segment whose writes are all committed is reused for a later one
// (Journal.recycle): its pages are in the page cache already, and
// copying over them costs a fraction of what new pages cost (on ext4 a
// 4 KiB record into a new page took about 4–5 µs whether written with
// pwritev or through a mapping, into a page already there 0.3 µs; a
// per-write record was about a fifth of the mount's CPU time during
// sequential 4 KiB writes). A reused file holds old records past the new
// ones, which Recover must never read as new: so the 9 bytes after the
// last record are always zero, written before the record (a record of
// length 0 has no valid kind and ends the segment), and a reused
// segment's first 9 bytes are zeroed before it takes a segment's name. A
// process killed while copying a record leaves it torn: its CRC fails
// (or, if the bytes not yet copied happened to equal what was there,
// holds exactly the record meant, which was never acknowledged and may
// count either way). Close cuts the file back to its records.
type segment struct {
	f      *os.File
	m      []byte // mapping of the file's first len(m) bytes; nil: pwritev only
	alloc  int64  // bytes allocated, the file's size while m is used
	off    int64  // end of the records
	reused bool   // the file may hold old bytes past off
}

// openSegment creates (or truncates) the segment file at path, mapped
// for size bytes.
func openSegment(path string, size int64) (*segment, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal segment: %w", err)
	}
	s := &segment{f: f}
	page := int64(os.Getpagesize())
	size = (size + page - 1) / page * page
	if m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
		s.m = m
	}
	return s, nil
}

// reusable reports whether the segment can be reset and reused: it is
// written through its mapping alone.
func (s *segment) reusable() bool { return s.m != nil && s.off+headerSize <= s.alloc }

// reset empties a reusable segment: it has no records from here on. A
// file longer than keep is cut to keep bytes (a segment that grew during a
// long flush would otherwise hold its size, in a tmpfs its memory, for
// good).
func (s *segment) reset(keep int64) {
	clear(s.m[:headerSize])
	s.off, s.reused = 0, true
	if s.alloc > keep && s.f.Truncate(keep) == nil {
		s.alloc = keep
	}
}

// write appends bufs, which are one record, or several in a segment not
// reused, at the end of the records.
func (s *segment) write(bufs ...[]byte) error {
	n := int64(0)
	for _, b := range bufs {
		n += int64(len(b))
	}
	end := s.off + n
	if s.m != nil && end+headerSize <= int64(len(s.m)) && s.allocate(end+headerSize) {
		if s.reused {
			clear(s.m[end : end+headerSize]) // before the record: see segment
		}
		at := s.off
		for _, b := range bufs {
			at += int64(copy(s.m[at:], b))
		}
		s.off = end
		return nil
	}
	if s.reused {
		if _, err := s.f.WriteAt(make([]byte, headerSize), end); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	w, err := unix.Pwritev(int(s.f.Fd()), bufs, s.off)
	if err == nil && int64(w) < n {
		_, err = s.f.WriteAt(join(bufs)[w:], s.off+int64(w))
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	s.off = end
	return nil
}

// allocate makes the file's first end bytes writable through the
// mapping, reporting whether they are. A failure unmaps the segment:
// every later record is written with pwritev.
func (s *segment) allocate(end int64) bool {
	if end <= s.alloc {
		return true
	}
	to := min(int64(len(s.m)), (end+allocStep-1)/allocStep*allocStep)
	if err := unix.Fallocate(int(s.f.Fd()), 0, s.alloc, to-s.alloc); err != nil {
		s.unmap()
		return false
	}
	s.alloc = to
	return true
}

func (s *segment) unmap() {
	if s.m != nil {
		_ = unix.Munmap(s.m)
		s.m = nil
	}
}

// close unmaps the segment, cuts off what follows its records and closes
// it.
func (s *segment) close() error {
	s.unmap()
	if s.alloc > s.off || s.reused {
		_ = s.f.Truncate(s.off)
	}
	return s.f.Close()
}

func join(bufs [][]byte) []byte {
	var out []byte
	for _, b := range bufs {
		out = append(out, b...)
	}
	return out
}
