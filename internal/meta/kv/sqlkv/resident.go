package sqlkv

import (
	"os"

	"golang.org/x/sys/unix"
)

// Keeping the SQLite files in memory.
//
// SQLite reads its pages through the OS page cache, and its own cache
// does not outlive a write: each connection drops its whole cache when
// another one has committed since its last transaction (the WAL changed),
// so the query-only readers, which answer lookups, getattrs and listings,
// read every page anew from the kernel. Once the kernel has dropped the
// files' pages (memory pressure, or drop_caches before a cold benchmark),
// each lookup, listing page and open waits for the disk, several times
// over: a B-tree descent of random 4 KiB reads. Worse, a commit writes
// its WAL frames (24 bytes plus a page, so never page-aligned) over the
// WAL's old contents, and the kernel must read each uncached 4 KiB block
// before it can overwrite part of it: a synchronous disk read inside the
// writer, which every other writer waits behind. Measured on the 2-core
// test machine after drop_caches: a cold read of 5,000 small files made
// the mount read 24 MiB from disk and spend 311 µs per open and 93 µs per
// lookup; with the files kept mapped, 8 KiB, 67 µs and 90 µs.
//
// So the checkpointer keeps both files mapped read-only (MAP_SHARED) and
// populated: the kernel does not drop a page cache page that a process
// maps, so a metadata engine that is a library keeps its data in memory
// as the metadata servers of the other engines (Redis, PostgreSQL's
// shared buffers, a MooseFS master) keep theirs. The pages stay ordinary
// clean file pages: not locked, so memory pressure still reclaims them
// (and the next refresh maps them again), and shared with SQLite's own
// reads and writes, so nothing is copied and nothing can go stale. The
// mapping is never read or written from Go (a page beyond a file that
// shrank would fault): it is only created, extended, populated with
// madvise(MADV_POPULATE_READ) and unmapped. Each file is mapped up to
// residentMax; past that, its tail is left to the page cache. On a kernel
// without MADV_POPULATE_READ (before 5.14) the files are mapped but not
// populated, which changes nothing: they are left to the page cache.
//
// A refresh runs after every background checkpoint (each ckptEvery
// commits) and when the database opens. It maps what a file grew by since
// the last one; pages that the checkpoint or the WAL rewrote inside the
// mapped range are the same page cache pages and stay mapped. Every
// residentFull-th refresh populates the whole mapping again, which brings
// back pages that memory pressure took (on pages already mapped it only
// walks the page table).
//
// Rejected: a larger cache_size for the readers (dropped at their next
// transaction after any commit); mmap_size (SQLite maps the database for
// its reads, but pages written by a checkpoint are not mapped until a
// reader touches them, so most of a freshly written database is dropped
// all the same, and the WAL, where recent pages live, is never mapped);
// mlock (memory that memory pressure cannot take back).
const (
	residentMax  = 1 << 30 // bytes of each file kept mapped at most
	residentFull = 64      // every this many refreshes, populate all
)

// residentFile is one file kept mapped.
type residentFile struct {
	path string
	ino  uint64 // the inode mapped (a file replaced under path is mapped afresh)
	mem  []byte // the mapping; never dereferenced
	// fd is the descriptor the file is mapped through (-1: none), of the
	// inode fdIno; retired are those of inodes replaced under path. None
	// is closed before closeFiles (after the pool's last connection):
	// closing any descriptor of the database file drops the locks
	// SQLite's connections in this process hold on it (the SHARED lock
	// that tells other processes the database is in use), whichever
	// inode they hold them on.
	fd      int
	fdIno   uint64
	retired []int
}

// resident keeps a database file and its WAL mapped; only the
// checkpointer's goroutine uses it.
type resident struct {
	files     []*residentFile
	refreshes int
}

func newResident(paths ...string) *resident {
	r := &resident{}
	for _, p := range paths {
		r.files = append(r.files, &residentFile{path: p, fd: -1})
	}
	return r
}

// refresh maps what the files grew by and, every residentFull calls,
// populates the whole mappings again. Failures leave a file to the page
// cache: it is an optimisation only.
func (r *resident) refresh() {
	r.refreshes++
	full := r.refreshes%residentFull == 1
	for _, f := range r.files {
		f.refresh(full)
	}
}

func (f *residentFile) refresh(full bool) {
	var st unix.Stat_t
	if err := unix.Stat(f.path, &st); err != nil {
		f.unmap()
		return
	}
	page := int64(os.Getpagesize())
	size := min((st.Size+page-1)/page*page, residentMax)
	old := int64(len(f.mem))
	switch {
	case size == 0 || size < old || st.Ino != f.ino:
		f.unmap() // shrank or replaced: map afresh
		f.ino = st.Ino
		if size > 0 {
			f.mapTo(size)
		}
	case size > old:
		f.mapTo(size)
	case full && size > 0:
		_ = unix.Madvise(f.mem, unix.MADV_POPULATE_READ)
	}
}

// mapTo maps the file's first size bytes (page-aligned), keeping what is
// mapped already, and populates the part that is new.
func (f *residentFile) mapTo(size int64) {
	old := len(f.mem)
	if old == 0 {
		if f.fd < 0 || f.fdIno != f.ino {
			fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || st.Ino != f.ino {
				f.retired = append(f.retired, fd) // replaced again meanwhile
				return
			}
			if f.fd >= 0 {
				f.retired = append(f.retired, f.fd)
			}
			f.fd, f.fdIno = fd, st.Ino
		}
		mem, err := unix.Mmap(f.fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return
		}
		f.mem = mem
	} else {
		mem, err := unix.Mremap(f.mem, int(size), unix.MREMAP_MAYMOVE)
		if err != nil {
			f.unmap()
			return
		}
		f.mem = mem
	}
	_ = unix.Madvise(f.mem[old:], unix.MADV_POPULATE_READ)
}

func (f *residentFile) unmap() {
	if f.mem != nil {
		_ = unix.Munmap(f.mem)
		f.mem = nil
	}
}

// close unmaps every file. The descriptors stay open (closeFiles).
func (r *resident) close() {
	for _, f := range r.files {
		f.unmap()
	}
}

// closeFiles closes the descriptors opened to map the files, once no
// connection of the pool is open (see residentFile.fds).
func (r *resident) closeFiles() {
	for _, f := range r.files {
		for _, fd := range append(f.retired, f.fd) {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
		}
		f.fd, f.retired = -1, nil
	}
}
